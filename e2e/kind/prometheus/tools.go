//go:build tools

// Package prometheus pins the Prometheus server that `e2e/kind/up.sh --offline` runs in
// the kind cluster: offline.sh builds github.com/prometheus/prometheus/cmd/prometheus
// from this module, because `go install` refuses that module (its go.mod has a replace
// directive, repeated in ours) and Debian's package is built without the Kubernetes
// service discovery that e2e/kind/prometheus.yaml uses.
package prometheus

import _ "github.com/prometheus/prometheus/cmd/prometheus"
