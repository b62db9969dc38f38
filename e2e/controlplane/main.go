// Command controlplane is meshscaler's local Kubernetes control plane for tests: one
// binary that runs a real etcd, the real kube-apiserver, the real
// kube-controller-manager, the node's kube-scheduler, kubelet and kube-proxy, and the
// real kubectl, all from one pinned Kubernetes release. It is built from Go modules
// because this project's machines can neither pull container images nor run kind.
//
// Each component runs in its own process (e2e/local starts them) so their global flag
// sets, feature gates and metric registries never meet, and so each can be stopped by
// PID. When the binary is invoked through a link named "kubectl" it behaves as kubectl.
//
// Usage:
//
//	controlplane etcd --data-dir DIR --listen-client URL --listen-peer URL
//	controlplane kube-apiserver [kube-apiserver flags]
//	controlplane kube-controller-manager [kube-controller-manager flags]
//	controlplane kube-scheduler [kube-scheduler flags]
//	controlplane kubelet [kubelet flags]
//	controlplane kube-proxy [kube-proxy flags]
//	controlplane pod-sd --kubeconfig FILE --out FILE   (Prometheus file_sd of annotated pods)
//	controlplane kubectl [kubectl flags]      (or: a link named kubectl)
//	controlplane version
package main

import (
	"context"
	"flag"
	"fmt"
	"net/url"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"
	"time"

	"go.etcd.io/etcd/server/v3/embed"
	"k8s.io/component-base/cli"
	"k8s.io/component-base/version"
	kubectlcmd "k8s.io/kubectl/pkg/cmd"
	kubectlutil "k8s.io/kubectl/pkg/cmd/util"
	apiserverapp "k8s.io/kubernetes/cmd/kube-apiserver/app"
	kcmapp "k8s.io/kubernetes/cmd/kube-controller-manager/app"
	proxyapp "k8s.io/kubernetes/cmd/kube-proxy/app"
	schedulerapp "k8s.io/kubernetes/cmd/kube-scheduler/app"
	kubeletapp "k8s.io/kubernetes/cmd/kubelet/app"
)

func usage() {
	fmt.Fprintln(os.Stderr, "usage: controlplane etcd|kube-apiserver|kube-controller-manager|kube-scheduler|kubelet|kube-proxy|pod-sd|kubectl|version [args]")
	os.Exit(2)
}

func main() {
	// A link named kubectl (e2e/.bin/kubectl) makes this binary kubectl itself.
	if filepath.Base(os.Args[0]) == "kubectl" {
		os.Exit(runKubectl())
	}
	if len(os.Args) < 2 {
		usage()
	}
	sub := os.Args[1]
	// Components read os.Args themselves (cobra, kubectl's plugin handler), so present
	// them with the argv they would see as stand-alone binaries.
	os.Args = append([]string{sub}, os.Args[2:]...)
	switch sub {
	case "etcd":
		os.Exit(runEtcd())
	case "kube-apiserver":
		os.Exit(cli.Run(apiserverapp.NewAPIServerCommand()))
	case "kube-controller-manager":
		os.Exit(cli.Run(kcmapp.NewControllerManagerCommand()))
	case "kube-scheduler":
		os.Exit(cli.Run(schedulerapp.NewSchedulerCommand()))
	case "kubelet":
		os.Exit(cli.Run(kubeletapp.NewKubeletCommand(context.Background())))
	case "kube-proxy":
		os.Exit(cli.Run(proxyapp.NewProxyCommand()))
	case "pod-sd":
		os.Exit(runPodSD())
	case "kubectl":
		os.Exit(runKubectl())
	case "version":
		fmt.Println(version.Get().GitVersion)
	default:
		usage()
	}
}

// runKubectl runs kubectl exactly as cmd/kubectl does.
func runKubectl() int {
	command := kubectlcmd.NewDefaultKubectlCommand()
	if err := cli.RunNoErrOutput(command); err != nil {
		kubectlutil.CheckErr(err) // prints the error the way kubectl does, then exits
	}
	return 0
}

// runEtcd starts a single-member embedded etcd for tests and serves until SIGTERM or
// SIGINT. Fsync is off: the data is disposable, and fsync dominates write latency.
func runEtcd() int {
	fs := flag.NewFlagSet("etcd", flag.ExitOnError)
	dataDir := fs.String("data-dir", "", "data directory (required)")
	client := fs.String("listen-client", "http://127.0.0.1:2379", "client URL")
	peer := fs.String("listen-peer", "http://127.0.0.1:2380", "peer URL")
	logLevel := fs.String("log-level", "warn", "zap log level")
	_ = fs.Parse(os.Args[1:])
	if *dataDir == "" {
		fmt.Fprintln(os.Stderr, "etcd: --data-dir is required")
		return 2
	}
	cu, err := url.Parse(*client)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: bad --listen-client: %v\n", err)
		return 2
	}
	pu, err := url.Parse(*peer)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: bad --listen-peer: %v\n", err)
		return 2
	}

	cfg := embed.NewConfig()
	cfg.Name = "meshscaler-e2e"
	cfg.Dir = *dataDir
	cfg.UnsafeNoFsync = true
	cfg.ListenClientUrls = []url.URL{*cu}
	cfg.AdvertiseClientUrls = []url.URL{*cu}
	cfg.ListenPeerUrls = []url.URL{*pu}
	cfg.AdvertisePeerUrls = []url.URL{*pu}
	cfg.InitialCluster = cfg.InitialClusterFromName(cfg.Name)
	cfg.LogLevel = *logLevel
	cfg.LogOutputs = []string{"stderr"}

	e, err := embed.StartEtcd(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "etcd: start: %v\n", err)
		return 1
	}
	defer e.Close()

	select {
	case <-e.Server.ReadyNotify():
		fmt.Fprintf(os.Stderr, "etcd: ready on %s\n", cu.String())
	case <-time.After(60 * time.Second):
		fmt.Fprintln(os.Stderr, "etcd: not ready after 60s")
		e.Server.Stop()
		return 1
	}

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	select {
	case s := <-sig:
		fmt.Fprintf(os.Stderr, "etcd: %v, stopping\n", s)
		return 0
	case err := <-e.Err():
		fmt.Fprintf(os.Stderr, "etcd: %v\n", err)
		return 1
	}
}
