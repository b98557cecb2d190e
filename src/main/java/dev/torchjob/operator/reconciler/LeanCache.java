package dev.torchjob.operator.reconciler;

import java.util.List;
import java.util.function.Consumer;

import io.fabric8.kubernetes.api.model.ContainerBuilder;
import io.fabric8.kubernetes.api.model.HasMetadata;
import io.fabric8.kubernetes.api.model.Pod;
import io.fabric8.kubernetes.api.model.PodSpec;
import io.fabric8.kubernetes.api.model.PodSpecBuilder;
import io.fabric8.kubernetes.client.informers.cache.BasicItemStore;
import io.fabric8.kubernetes.client.informers.cache.Cache;

/**
 * The informer cache of a job's pods and Services, keeping what the operator reads of them: their
 * metadata and status, and of a pod's spec the names of its containers (which one is the training
 * container), its node and its scheduling gates. The rest — {@code metadata.managedFields} (an entry per writer: operator,
 * scheduler, kubelet), and the spec with its env, command, volumes and the tolerations admission
 * added — is most of a pod on a real API server, and the cache holds every pod of every job for as
 * long as the operator runs: the largest part of its memory under load (docs/testing.md).
 * What leaves the cache is handed on first, while no pass can miss it yet ({@link GonePods}).
 */
final class LeanCache<R extends HasMetadata> extends BasicItemStore<R> {
    private final Consumer<R> leaving;

    LeanCache() {
        this(left -> {
        });
    }

    LeanCache(Consumer<R> leaving) {
        super(Cache::metaNamespaceKeyFunc);
        this.leaving = leaving;
    }

    @Override
    public R put(String key, R object) {
        object.getMetadata().setManagedFields(null);
        if (object instanceof Pod pod && pod.getSpec() != null) {
            pod.setSpec(leanSpec(pod.getSpec()));
        }
        return super.put(key, object);
    }

    @Override
    public R remove(String key) {
        R left = get(key);
        if (left != null) {
            leaving.accept(left);
        }
        return super.remove(key);
    }

    /**
     * The container names, the node, the restart policy (whether the kubelet starts an ended training container
     * again) and the scheduling gates still on it (what holds a pending pod back): all of a pod's spec that a job
     * pass reads.
     */
    static PodSpec leanSpec(PodSpec spec) {
        List<io.fabric8.kubernetes.api.model.Container> names = spec.getContainers() == null ? null
                : spec.getContainers().stream().map(c -> new ContainerBuilder().withName(c.getName()).build()).toList();
        return new PodSpecBuilder().withContainers(names).withNodeName(spec.getNodeName())
                .withRestartPolicy(spec.getRestartPolicy()).withSchedulingGates(spec.getSchedulingGates()).build();
    }
}
