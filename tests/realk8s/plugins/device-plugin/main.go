// Command device-plugin is the realk8s tier's stand-in for NVIDIA's GPU device plugin (NVIDIA/k8s-device-plugin) on a
// real node: it advertises -resource with -devices fake healthy devices through the kubelet's device-plugin gRPC API
// v1beta1, so a pod's `nvidia.com/gpu` request is admitted and allocated by the kubelet's own device manager. The
// server is the kubelet's own stub (k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/plugin/v1beta1, stub.go), used the
// way upstream's test/images/sample-device-plugin/sampledeviceplugin.go uses it. Allocate answers as NVIDIA's plugin
// does with its default envvar strategy (internal/plugin/server.go, `NVIDIA_VISIBLE_DEVICES` listing the allocated
// device IDs); there is no device node to mount, and containerd 1.6 has no CDI.
package main

import (
	"flag"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"k8s.io/klog/v2"
	pluginapi "k8s.io/kubelet/pkg/apis/deviceplugin/v1beta1"
	plugin "k8s.io/kubernetes/pkg/kubelet/cm/devicemanager/plugin/v1beta1"
)

func allocate(r *pluginapi.AllocateRequest, devs map[string]*pluginapi.Device) (*pluginapi.AllocateResponse, error) {
	var out pluginapi.AllocateResponse
	for _, req := range r.ContainerRequests {
		for _, id := range req.DevicesIds {
			if dev, ok := devs[id]; !ok || dev.Health != pluginapi.Healthy {
				return nil, fmt.Errorf("allocation of unknown or unhealthy device %s", id)
			}
		}
		out.ContainerResponses = append(out.ContainerResponses, &pluginapi.ContainerAllocateResponse{
			Envs: map[string]string{"NVIDIA_VISIBLE_DEVICES": strings.Join(req.DevicesIds, ",")},
		})
	}
	return &out, nil
}

func main() {
	resource := flag.String("resource", "nvidia.com/gpu", "the extended resource advertised")
	count := flag.Int("devices", 4, "fake devices advertised")
	dir := flag.String("plugin-dir", pluginapi.DevicePluginPath, "the kubelet's device-plugin folder")
	flag.Parse()
	devs := make([]*pluginapi.Device, *count)
	for i := range devs {
		devs[i] = &pluginapi.Device{ID: fmt.Sprintf("GPU-realk8s-%d", i), Health: pluginapi.Healthy}
	}
	// The kubelet makes the folder and its registration socket when its device manager starts.
	kubelet := filepath.Join(*dir, "kubelet.sock")
	for i := 0; ; i++ {
		if _, err := os.Stat(kubelet); err == nil {
			break
		}
		if i == 600 {
			klog.Fatalf("no %s after 60 s", kubelet)
		}
		time.Sleep(100 * time.Millisecond)
	}
	stub := plugin.NewDevicePluginStub(devs, filepath.Join(*dir, "realk8s-gpu.sock"), *resource, false, false)
	stub.SetAllocFunc(allocate)
	if err := stub.Start(); err != nil {
		klog.Fatalf("start: %v", err)
	}
	if err := stub.Register(kubelet, *resource, *dir); err != nil {
		klog.Fatalf("register with %s: %v", kubelet, err)
	}
	klog.Infof("registered %s with %d devices", *resource, *count)
	signals := make(chan os.Signal, 1)
	signal.Notify(signals, syscall.SIGINT, syscall.SIGTERM)
	<-signals
	_ = stub.Stop()
}
