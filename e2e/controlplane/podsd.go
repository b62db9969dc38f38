package main

// pod-sd: Prometheus service discovery for the local cluster's pods, as a file_sd
// file. Debian's Prometheus 2.42 is built without kubernetes_sd_configs, so this
// watches pods with client-go and writes the targets most clusters' Prometheus would
// discover: pods annotated prometheus.io/scrape: "true", at prometheus.io/port and
// prometheus.io/path, labelled with their namespace, pod and node (the labels
// meshscaler's presets group by).

import (
	"encoding/json"
	"flag"
	"fmt"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"sort"
	"strconv"
	"syscall"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/informers"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/clientcmd"
)

type sdGroup struct {
	Targets []string          `json:"targets"`
	Labels  map[string]string `json:"labels"`
}

// podTarget is the scrape target of one pod, or false when it asks for none or is
// not running yet.
func podTarget(p *corev1.Pod) (sdGroup, bool) {
	a := p.Annotations
	if a["prometheus.io/scrape"] != "true" || p.Status.Phase != corev1.PodRunning || p.Status.PodIP == "" ||
		p.DeletionTimestamp != nil {
		return sdGroup{}, false
	}
	port, err := strconv.Atoi(a["prometheus.io/port"])
	if err != nil || port <= 0 || port > 65535 {
		return sdGroup{}, false
	}
	l := map[string]string{"namespace": p.Namespace, "pod": p.Name, "node": p.Spec.NodeName}
	if path := a["prometheus.io/path"]; path != "" {
		l["__metrics_path__"] = path
	}
	return sdGroup{Targets: []string{net.JoinHostPort(p.Status.PodIP, strconv.Itoa(port))}, Labels: l}, true
}

// writeTargets replaces out atomically (Prometheus must never read half a file).
func writeTargets(out string, groups []sdGroup) error {
	data, err := json.MarshalIndent(groups, "", "  ")
	if err != nil {
		return err
	}
	tmp := filepath.Join(filepath.Dir(out), "."+filepath.Base(out)+".tmp")
	if err := os.WriteFile(tmp, append(data, '\n'), 0o644); err != nil {
		return err
	}
	return os.Rename(tmp, out)
}

func runPodSD() int {
	fs := flag.NewFlagSet("pod-sd", flag.ExitOnError)
	kubeconfig := fs.String("kubeconfig", "", "kubeconfig of an identity that may list and watch pods (required)")
	out := fs.String("out", "", "file_sd file to write (required)")
	_ = fs.Parse(os.Args[1:])
	if *kubeconfig == "" || *out == "" {
		fmt.Fprintln(os.Stderr, "pod-sd: --kubeconfig and --out are required")
		return 2
	}
	cfg, err := clientcmd.BuildConfigFromFlags("", *kubeconfig)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pod-sd: %v\n", err)
		return 1
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		fmt.Fprintf(os.Stderr, "pod-sd: %v\n", err)
		return 1
	}
	factory := informers.NewSharedInformerFactory(cs, 0)
	pods := factory.Core().V1().Pods()
	changed := make(chan struct{}, 1)
	poke := func() {
		select {
		case changed <- struct{}{}:
		default:
		}
	}
	_, _ = pods.Informer().AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    func(any) { poke() },
		UpdateFunc: func(any, any) { poke() },
		DeleteFunc: func(any) { poke() },
	})
	stop := make(chan struct{})
	factory.Start(stop)
	factory.WaitForCacheSync(stop)
	poke()

	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM, syscall.SIGINT)
	for {
		select {
		case <-sig:
			close(stop)
			return 0
		case <-changed:
			// Coalesce a burst of pod updates (a rollout) into one write.
			time.Sleep(100 * time.Millisecond)
			list, err := pods.Lister().List(labels.Everything())
			if err != nil {
				fmt.Fprintf(os.Stderr, "pod-sd: %v\n", err)
				continue
			}
			groups := []sdGroup{}
			for _, p := range list {
				if g, ok := podTarget(p); ok {
					groups = append(groups, g)
				}
			}
			sort.Slice(groups, func(i, j int) bool { return groups[i].Targets[0] < groups[j].Targets[0] })
			if err := writeTargets(*out, groups); err != nil {
				fmt.Fprintf(os.Stderr, "pod-sd: %v\n", err)
			}
		}
	}
}
