// A stand-in for a GPU vendor's device plugin (NVIDIA's k8s-device-plugin) on the real node, which has no GPU: it
// registers nvidia.com/gpu with the kubelet, -count devices named GPU-0, GPU-1, …, and gives a container the ones the
// kubelet allocates it in NVIDIA_VISIBLE_DEVICES, as NVIDIA's plugin does. A device named in the file -unhealthy (one
// name a line, read whenever it changes) is reported Unhealthy, as the vendor's plugin reports a GPU after a fatal
// Xid error; taken out of the file it is Healthy again. It registers anew whenever the kubelet restarts (the kubelet
// removes every plugin's socket at its start). Built by node.sh.
package main

import (
	"context"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"syscall"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials/insecure"
	api "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
)

const resource = "nvidia.com/gpu"

type plugin struct {
	api.UnimplementedDevicePluginServer
	names []string

	mu        sync.Mutex
	unhealthy string // the file's content, as last read
	changed   chan struct{}
}

func (p *plugin) devices() []*api.Device {
	p.mu.Lock()
	defer p.mu.Unlock()
	bad := strings.Fields(p.unhealthy)
	devices := make([]*api.Device, 0, len(p.names))
	for _, name := range p.names {
		health := api.Healthy
		if slices.Contains(bad, name) {
			health = api.Unhealthy
		}
		devices = append(devices, &api.Device{ID: name, Health: health})
	}
	return devices
}

func (p *plugin) GetDevicePluginOptions(context.Context, *api.Empty) (*api.DevicePluginOptions, error) {
	return &api.DevicePluginOptions{}, nil
}

func (p *plugin) ListAndWatch(_ *api.Empty, stream grpc.ServerStreamingServer[api.ListAndWatchResponse]) error {
	for {
		p.mu.Lock()
		changed := p.changed
		p.mu.Unlock()
		devices := p.devices()
		if err := stream.Send(&api.ListAndWatchResponse{Devices: devices}); err != nil {
			return err
		}
		say("devices %s", describe(devices))
		select {
		case <-changed:
		case <-stream.Context().Done():
			return nil
		}
	}
}

func (p *plugin) Allocate(_ context.Context, request *api.AllocateRequest) (*api.AllocateResponse, error) {
	response := &api.AllocateResponse{}
	for _, container := range request.ContainerRequests {
		ids := strings.Join(container.DevicesIds, ",")
		say("allocates %s", ids)
		response.ContainerResponses = append(response.ContainerResponses,
			&api.ContainerAllocateResponse{Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": ids}})
	}
	return response, nil
}

// watch reads the file of unhealthy devices whenever it changes and tells ListAndWatch.
func (p *plugin) watch(file string) {
	for range time.Tick(100 * time.Millisecond) {
		content, err := os.ReadFile(file)
		if err != nil && !os.IsNotExist(err) {
			say("cannot read %s: %v", file, err)
			continue
		}
		p.mu.Lock()
		if string(content) != p.unhealthy {
			p.unhealthy = string(content)
			close(p.changed)
			p.changed = make(chan struct{})
		}
		p.mu.Unlock()
	}
}

// serve listens on the plugin's socket and registers with the kubelet; it returns when the socket is removed
// (a restarted kubelet clears the directory), so that main registers anew.
func serve(p *plugin, dir string) error {
	socket := filepath.Join(dir, "torchjob-gpus.sock")
	_ = os.Remove(socket)
	listener, err := net.Listen("unix", socket)
	if err != nil {
		return err
	}
	server := grpc.NewServer()
	api.RegisterDevicePluginServer(server, p)
	go func() { _ = server.Serve(listener) }()
	defer server.Stop()

	conn, err := grpc.NewClient("unix://"+filepath.Join(dir, "kubelet.sock"), grpc.WithTransportCredentials(insecure.NewCredentials()))
	if err != nil {
		return err
	}
	defer conn.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	if _, err := api.NewRegistrationClient(conn).Register(ctx, &api.RegisterRequest{
		Version: api.Version, Endpoint: filepath.Base(socket), ResourceName: resource,
	}); err != nil {
		return err
	}
	say("registered %d devices of %s", len(p.names), resource)
	for range time.Tick(250 * time.Millisecond) {
		if _, err := os.Stat(socket); err != nil {
			say("socket gone: the kubelet restarted")
			return nil
		}
	}
	return nil
}

func main() {
	dir := flag.String("dir", api.DevicePluginPath, "the kubelet's device-plugins directory")
	count := flag.Int("count", 4, "how many devices")
	unhealthy := flag.String("unhealthy", "", "a file naming the devices that are unhealthy")
	flag.Parse()
	p := &plugin{changed: make(chan struct{})}
	for i := range *count {
		p.names = append(p.names, fmt.Sprintf("GPU-%d", i))
	}
	if *unhealthy != "" {
		go p.watch(*unhealthy)
	}
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGTERM, syscall.SIGINT)
	go func() { <-signals; os.Exit(0) }()
	for {
		if _, err := os.Stat(filepath.Join(*dir, "kubelet.sock")); err != nil {
			time.Sleep(250 * time.Millisecond)
			continue
		}
		if err := serve(p, *dir); err != nil {
			say("%v", err)
			time.Sleep(time.Second)
		}
	}
}

func describe(devices []*api.Device) string {
	parts := make([]string, 0, len(devices))
	for _, d := range devices {
		parts = append(parts, d.ID+" "+d.Health)
	}
	return strings.Join(parts, ", ")
}

func say(format string, args ...any) {
	fmt.Fprintf(os.Stderr, "gpus: "+format+"\n", args...)
}
