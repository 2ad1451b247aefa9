// Command dra-plugin is the realk8s tier's stand-in for the NVIDIA DRA driver's compute-domain kubelet plugin
// (NVIDIA/k8s-dra-driver-gpu cmd/compute-domain-kubelet-plugin) on a real node: registered with the kubelet through
// its plugin registration and DRA gRPC APIs by the upstream helper k8s.io/dynamic-resource-allocation/kubeletplugin,
// structured as kubernetes-sigs/dra-example-driver's cmd/dra-example-kubeletplugin/driver.go, so the kubelet's own
// DRA manager prepares a pod's ComputeDomain channel claim before its containers start. NodePrepareResources answers
// each device of this driver allocated in the claim with a CDI device ID of the driver's kind (as the upstream plugin
// names its channel devices); the ResourceSlices are published by tests/realk8s/dra.py, and containerd 1.6 has no CDI,
// so nothing is injected.
package main

import (
	"context"
	"flag"
	"os"
	"os/signal"
	"syscall"
	"time"

	resourceapi "k8s.io/api/resource/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/clientcmd"
	"k8s.io/dynamic-resource-allocation/kubeletplugin"
	"k8s.io/klog/v2"
)

type driver struct{ name string }

func (d driver) PrepareResourceClaims(ctx context.Context, claims []*resourceapi.ResourceClaim) (map[types.UID]kubeletplugin.PrepareResult, error) {
	out := make(map[types.UID]kubeletplugin.PrepareResult, len(claims))
	for _, claim := range claims {
		var result kubeletplugin.PrepareResult
		if claim.Status.Allocation == nil {
			result.Err = os.ErrInvalid
			out[claim.UID] = result
			continue
		}
		for _, r := range claim.Status.Allocation.Devices.Results {
			if r.Driver != d.name {
				continue
			}
			result.Devices = append(result.Devices, kubeletplugin.Device{
				Requests:     []string{r.Request},
				PoolName:     r.Pool,
				DeviceName:   r.Device,
				CDIDeviceIDs: []string{"k8s." + d.name + "/claim=" + string(claim.UID) + "-" + r.Device},
			})
		}
		klog.InfoS("prepared", "claim", klog.KObj(claim), "devices", len(result.Devices))
		out[claim.UID] = result
	}
	return out, nil
}

func (d driver) UnprepareResourceClaims(ctx context.Context, claims []kubeletplugin.NamespacedObject) (map[types.UID]error, error) {
	out := make(map[types.UID]error, len(claims))
	for _, claim := range claims {
		out[claim.UID] = nil
	}
	return out, nil
}

func (d driver) HandleError(ctx context.Context, err error, msg string) {
	klog.ErrorS(err, msg)
}

func main() {
	name := flag.String("driver-name", "compute-domain.nvidia.com", "the DRA driver name")
	node := flag.String("node-name", "", "the node this plugin serves")
	kubeconfig := flag.String("kubeconfig", "", "the node's kubeconfig")
	registrar := flag.String("registrar-dir", "", "the kubelet's plugins_registry folder")
	data := flag.String("plugin-dir", "", "the folder of this plugin's socket")
	flag.Parse()
	config, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		klog.Fatalf("kubeconfig: %v", err)
	}
	client, err := kubernetes.NewForConfig(config)
	if err != nil {
		klog.Fatalf("client: %v", err)
	}
	// The kubelet makes its registration folder when its plugin manager starts.
	for i := 0; ; i++ {
		if _, err := os.Stat(*registrar); err == nil {
			break
		}
		if i == 600 {
			klog.Fatalf("no %s after 60 s", *registrar)
		}
		time.Sleep(100 * time.Millisecond)
	}
	if err := os.MkdirAll(*data, 0o750); err != nil {
		klog.Fatalf("plugin folder: %v", err)
	}
	ctx, cancel := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer cancel()
	helper, err := kubeletplugin.Start(ctx, driver{*name},
		kubeletplugin.DriverName(*name),
		kubeletplugin.NodeName(*node),
		kubeletplugin.KubeClient(client),
		kubeletplugin.RegistrarDirectoryPath(*registrar),
		kubeletplugin.PluginDataDirectoryPath(*data),
	)
	if err != nil {
		klog.Fatalf("start: %v", err)
	}
	klog.InfoS("serving", "driver", *name, "node", *node)
	<-ctx.Done()
	helper.Stop()
}
