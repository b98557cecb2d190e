{{/* The name of the operator's objects: the release name, unless it already says torchjob-operator. */}}
{{- define "torchjob.fullname" -}}
{{- if contains "torchjob-operator" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-torchjob-operator" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The labels the operator's pods are selected by. */}}
{{- define "torchjob.selectorLabels" -}}
app.kubernetes.io/name: torchjob-operator
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "torchjob.labels" -}}
{{ include "torchjob.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/*
What the operator does with its jobs, in every namespace it watches (rules of a ClusterRole, or of a
Role per watched namespace). kubernetes/base/rbac.yaml and kubernetes/kubeflow/rbac.yaml say the same;
a test keeps them equal.
*/}}
{{- define "torchjob.jobRules" -}}
# Watch jobs; write only their status (the operator never edits a user's spec). patch: Kueue's
# default LocalQueue, the one label written, once, on a new job without a queue (as Kueue's webhooks).
- apiGroups: ["batch.tensorstack.dev"]
  resources: ["pytorchtrainingjobs"]
  verbs: ["get", "list", "watch"{{ if .Values.kueue.enabled }}, "patch"{{ end }}]
- apiGroups: ["batch.tensorstack.dev"]
  resources: ["pytorchtrainingjobs/status"]
  verbs: ["get", "update", "patch"]
# Pods and Services block their job's foreground deletion (blockOwnerDeletion).
- apiGroups: ["batch.tensorstack.dev"]
  resources: ["pytorchtrainingjobs/finalizers"]
  verbs: ["update"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch", "create", "delete", "patch"]
- apiGroups: [""]
  resources: ["services"]
  verbs: ["get", "list", "watch", "create"{{ if .Values.kubeflow.enabled }}, "delete"{{ end }}]
# Events: the job's own; and the Warning events of a pod slow to start, the only place a volume
# that cannot be mounted is said (read by that pod's UID, only for such pods).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "list"]
# The T9k scheduler's gang (only for jobs with spec.scheduler.t9kScheduler).
- apiGroups: ["scheduler.tensorstack.dev"]
  resources: ["podgroups"]
  verbs: ["get", "create"]
{{- if .Values.kueue.enabled }}
# Kueue's Workload protocol (jobs labelled kueue.x-k8s.io/queue-name).
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["workloads/finalizers"]
  verbs: ["update"]
# The LocalQueues named default (Kueue's default LocalQueue of a namespace).
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["localqueues"]
  verbs: ["get", "list", "watch"]
{{- include "torchjob.kueueOwnerRules" . | nindent 0 }}
{{- end }}
{{- if .Values.kubeflow.enabled }}
# kubeflow.org/v1 PyTorchJob; delete: ttlSecondsAfterFinished; patch: Kueue's default LocalQueue label.
- apiGroups: ["kubeflow.org"]
  resources: ["pytorchjobs"]
  verbs: ["get", "list", "watch", {{ if .Values.kueue.enabled }}"patch", {{ end }}"delete"]
- apiGroups: ["kubeflow.org"]
  resources: ["pytorchjobs/status"]
  verbs: ["get", "update", "patch"]
- apiGroups: ["kubeflow.org"]
  resources: ["pytorchjobs/finalizers"]
  verbs: ["update"]
# Elastic PyTorchJobs with elasticPolicy.metrics: the autoscaler of their workers.
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch", "create", "update", "delete"]
{{- with .Values.kubeflow.gangSchedulerName }}
# The PyTorchJobs' PodGroups (one per job, named and owned by it), for the gang scheduler {{ . }}.
- apiGroups: [{{ if eq . "volcano" }}"scheduling.volcano.sh"{{ else if eq . "kubernetes" }}"scheduling.k8s.io"{{ else }}"scheduling.x-k8s.io"{{ end }}]
  resources: ["podgroups"]
  verbs: ["get", "list", "watch", "create", "update", "patch", "delete"]
{{- end }}
{{- end }}
{{- end -}}

{{/* A job's controller owners of the kinds Kueue knows, read once (Kueue queues a job through an owner it manages). */}}
{{- define "torchjob.kueueOwnerRules" -}}
- apiGroups: ["batch"]
  resources: ["jobs"]
  verbs: ["get"]
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets", "replicasets"]
  verbs: ["get"]
- apiGroups: ["kubeflow.org"]
  resources: ["mpijobs", "tfjobs", "paddlejobs", "xgboostjobs", "jaxjobs"{{ if not .Values.kubeflow.enabled }}, "pytorchjobs"{{ end }}]
  verbs: ["get"]
- apiGroups: ["ray.io"]
  resources: ["rayjobs", "rayclusters", "rayservices"]
  verbs: ["get"]
- apiGroups: ["jobset.x-k8s.io"]
  resources: ["jobsets"]
  verbs: ["get"]
- apiGroups: ["workload.codeflare.dev"]
  resources: ["appwrappers"]
  verbs: ["get"]
- apiGroups: ["trainer.kubeflow.org"]
  resources: ["trainjobs"]
  verbs: ["get"]
- apiGroups: ["sparkoperator.k8s.io"]
  resources: ["sparkapplications"]
  verbs: ["get"]
- apiGroups: ["leaderworkerset.x-k8s.io"]
  resources: ["leaderworkersets"]
  verbs: ["get"]
{{- end -}}

{{/* Cluster-scoped objects Kueue's admissions and Workloads name: read only. */}}
{{- define "torchjob.clusterRules" -}}
- apiGroups: ["kueue.x-k8s.io"]
  resources: ["resourceflavors", "workloadpriorityclasses"]
  verbs: ["get", "list", "watch"]
- apiGroups: ["scheduling.k8s.io"]
  resources: ["priorityclasses"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["namespaces"]
  verbs: ["get", "list", "watch"]
{{- end -}}

{{/*
Refuses an extraEnv entry that sets a Quarkus setting fixed when the operator is built, the profile
among them: the JVM would honour it, the native executable ignores it. files/build-time-settings.txt
lists those settings (a name pattern and the property, a line each), from the extensions' own
configuration model; a test keeps it so.
*/}}
{{- define "torchjob.checkExtraEnv" -}}
{{- $fixed := .Files.Lines "files/build-time-settings.txt" -}}
{{- range .Values.extraEnv -}}
{{- $name := .name -}}
{{- range $fixed -}}
{{- $setting := splitList " " . -}}
{{- if and (eq (len $setting) 2) (regexMatch (first $setting) $name) -}}
{{- fail (printf "extraEnv: %s sets %s, which Quarkus fixes when the operator is built: the native executable ignores it (docs/user-guide.md, settings fixed at build time)" $name (last $setting)) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- end -}}
