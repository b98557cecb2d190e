// A stand-in for a GPU vendor's DRA driver (NVIDIA's dra-driver-nvidia-gpu) on the real node, which has no GPU: a
// kubelet plugin of the driver gpu.torchjob.test that publishes -count devices, gpu-0, gpu-1, …, in a ResourceSlice of
// the node's pool, prepares the claims the scheduler allocated them to (nothing to set up: no CDI device), and reports
// each device's health to the kubelet. The file -faults, read whenever it changes, holds one line a failed device:
//
//	gpu-1 Unhealthy ECC error count exceeded threshold   the device's health is Unhealthy, with these words
//	gpu-1 NoSchedule                                     the slice taints the device: no new claim gets it
//	gpu-1 NoExecute                                      as NoSchedule, and Kubernetes evicts the pods using it
//
// as the vendor's driver reports and taints a GPU after a fatal Xid error. A device not named is Healthy and untainted.
// Built by node.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"
	"strings"
	"sync"
	"syscall"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/dynamic-resource-allocation/resourceslice"
)

const (
	driver   = "gpu.torchjob.test"
	taintKey = driver + "/failed"
	// How often health is reported again unchanged: the kubelet takes a device's health as Unknown once a report is
	// older than its timeout.
	reportEvery   = 5 * time.Second
	healthTimeout = 30 * time.Second
)

type fault struct {
	kind    string // Unhealthy, NoSchedule or NoExecute
	message string
}

type stand struct {
	node    string
	names   []string
	helper  *kubeletplugin.Helper
	mu      sync.Mutex
	faults  map[string][]fault
	changed chan struct{}
}

func (s *stand) PrepareResourceClaims(_ context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	result := map[types.UID]kubeletplugin.PrepareResult{}
	for _, claim := range claims {
		var devices []kubeletplugin.Device
		if claim.Status.Allocation != nil {
			for _, r := range claim.Status.Allocation.Devices.Results {
				if r.Driver != driver {
					continue
				}
				devices = append(devices, kubeletplugin.Device{Requests: []string{r.Request}, PoolName: r.Pool, DeviceName: r.Device})
				say("prepares %s for claim %s/%s", r.Device, claim.Namespace, claim.Name)
			}
		}
		result[claim.UID] = kubeletplugin.PrepareResult{Devices: devices}
	}
	return result, nil
}

func (s *stand) UnprepareResourceClaims(_ context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	result := map[types.UID]error{}
	for _, claim := range claims {
		say("unprepares claim %s", claim)
		result[claim.UID] = nil
	}
	return result, nil
}

func (s *stand) HandleError(_ context.Context, err error, msg string) {
	say("%s: %v", msg, err)
}

// WatchHealthStatus reports every device's health at once, whenever the faults change and every reportEvery.
func (s *stand) WatchHealthStatus(ctx context.Context, reports chan<- kubeletplugin.DeviceHealthReport) error {
	tick := time.NewTicker(reportEvery)
	defer tick.Stop()
	for {
		s.mu.Lock()
		changed := s.changed
		report := kubeletplugin.DeviceHealthReport{}
		for _, name := range s.names {
			health := kubeletplugin.DeviceHealth{PoolName: s.node, DeviceName: name, Health: kubeletplugin.HealthStatusHealthy,
				LastUpdated: time.Now(), HealthCheckTimeout: healthTimeout}
			for _, f := range s.faults[name] {
				if f.kind == "Unhealthy" {
					health.Health, health.Message = kubeletplugin.HealthStatusUnhealthy, f.message
				}
			}
			report.Devices = append(report.Devices, health)
		}
		s.mu.Unlock()
		select {
		case reports <- report:
		case <-ctx.Done():
			return nil
		}
		select {
		case <-changed:
		case <-tick.C:
		case <-ctx.Done():
			return nil
		}
	}
}

// publish writes the node's ResourceSlice: every device, a failed one tainted as its faults say.
func (s *stand) publish(ctx context.Context) error {
	s.mu.Lock()
	devices := make([]resourceapi.Device, 0, len(s.names))
	for _, name := range s.names {
		device := resourceapi.Device{Name: name}
		for _, f := range s.faults[name] {
			if f.kind == "NoSchedule" || f.kind == "NoExecute" {
				added := metav1.Now()
				device.Taints = append(device.Taints, resourceapi.DeviceTaint{Key: taintKey, Effect: resourceapi.DeviceTaintEffect(f.kind), TimeAdded: &added})
			}
		}
		devices = append(devices, device)
	}
	s.mu.Unlock()
	return s.helper.PublishResources(ctx, resourceslice.DriverResources{Pools: map[string]resourceslice.Pool{
		s.node: {Slices: []resourceslice.Slice{{Devices: devices}}},
	}})
}

// watch reads the faults file whenever it changes: the health reports and the slice follow.
func (s *stand) watch(ctx context.Context, file string) {
	last := ""
	for range time.Tick(100 * time.Millisecond) {
		content, err := os.ReadFile(file)
		if err != nil && !os.IsNotExist(err) {
			say("cannot read %s: %v", file, err)
			continue
		}
		if string(content) == last {
			continue
		}
		last = string(content)
		faults := map[string][]fault{}
		for _, line := range strings.Split(last, "\n") {
			fields := strings.Fields(line)
			if len(fields) >= 2 {
				faults[fields[0]] = append(faults[fields[0]], fault{kind: fields[1], message: strings.Join(fields[2:], " ")})
			}
		}
		s.mu.Lock()
		s.faults = faults
		close(s.changed)
		s.changed = make(chan struct{})
		s.mu.Unlock()
		say("faults: %v", faults)
		if err := s.publish(ctx); err != nil {
			say("cannot publish: %v", err)
		}
	}
}

func main() {
	kubeconfig := flag.String("kubeconfig", "", "the kubeconfig the driver publishes its ResourceSlice with")
	node := flag.String("node", "", "the node's name")
	kubeletDir := flag.String("kubelet-dir", "/var/lib/kubelet", "the kubelet's root directory")
	count := flag.Int("count", 4, "how many devices")
	faults := flag.String("faults", "", "a file naming the failed devices")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fail(err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		fail(err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer cancel()
	s := &stand{node: *node, faults: map[string][]fault{}, changed: make(chan struct{})}
	for i := range *count {
		s.names = append(s.names, fmt.Sprintf("gpu-%d", i))
	}
	registry, data := *kubeletDir+"/plugins_registry", *kubeletDir+"/plugins/"+driver
	for _, dir := range []string{registry, data} {
		if err := os.MkdirAll(dir, 0o750); err != nil {
			fail(err)
		}
	}
	s.helper, err = kubeletplugin.Start(ctx, s, kubeletplugin.DriverName(driver), kubeletplugin.NodeName(*node),
		kubeletplugin.KubeClient(client), kubeletplugin.RegistrarDirectoryPath(registry), kubeletplugin.PluginDataDirectoryPath(data))
	if err != nil {
		fail(err)
	}
	defer s.helper.Stop()
	if err := s.publish(ctx); err != nil {
		fail(err)
	}
	say("ready: %d devices of %s on %s", len(s.names), driver, *node)
	if *faults != "" {
		go s.watch(ctx, *faults)
	}
	<-ctx.Done()
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "dra: "+format+"\n", args...)
}

func fail(err error) {
	say("%v", err)
	os.Exit(1)
}
