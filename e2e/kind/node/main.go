// Command node is every Kubernetes program of the offline kind node image
// (e2e/kind/offline.sh): kubeadm, kubelet and kubectl on the node, and kube-apiserver,
// kube-controller-manager, kube-scheduler, kube-proxy and etcd in the component images
// kubeadm runs. It is built from the same k8s.io/kubernetes release as e2e/controlplane
// because no registry (and so no release image) is reachable here.
//
// It dispatches on the name it is invoked by (argv[0]), not on a subcommand like
// e2e/controlplane does: kubeadm's manifests exec `kube-apiserver`, `etcd` and the
// others by name with their own flags, and kind execs `kubeadm` and `kubectl`, so each
// name is a link to this one binary.
package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	"go.etcd.io/etcd/server/v3/etcdmain"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxyapp "k8s.io/kubernetes/cmd/kube-proxy/app"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeadmapp "k8s.io/kubernetes/cmd/kubeadm/app"
	kubeadmerrors "k8s.io/kubernetes/cmd/kubeadm/app/util/errors"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
)

// programs are the names this binary answers to; the node image links each to it.
var programs = "kubeadm kubelet kubectl kube-apiserver kube-controller-manager kube-scheduler kube-proxy etcd"

func main() {
	name := filepath.Base(os.Args[0])
	switch name {
	case "kubeadm":
		kubeadmerrors.HandleError(kubeadmapp.Run())
	case "kubelet":
		os.Exit(cli.Run(kubeletapp.NewKubeletCommand(context.Background())))
	case "kubectl":
		command := kubectlcmd.NewDefaultKubectlCommand()
		if err := cli.RunNoErrOutput(command); err != nil {
			kubectlutil.CheckErr(err) // prints the error the way kubectl does, then exits
		}
	case "kube-apiserver":
		os.Exit(cli.Run(apiserverapp.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(kcmapp.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(schedulerapp.NewSchedulerCommand()))
	case "kube-proxy":
		os.Exit(cli.Run(proxyapp.NewProxyCommand()))
	case "etcd":
		etcdmain.Main(os.Args)
	case "k8s-node-version":
		fmt.Println(version.Get().GitVersion)
	default:
		fmt.Fprintf(os.Stderr, "%s: invoke this binary through a link named one of: %s k8s-node-version\n", name, programs)
		os.Exit(2)
	}
}
