# shellcheck shell=bash
# The Kubernetes objects of the lab's scenarios, sourced by e2e/lab/run.sh (which
# sets the variables named below, SCENARIO among them).
#
# Both arms run the same workload in a namespace of their own: a Deployment of the
# lab app (e2e/lab/app) behind the project's HAProxy sidecar (e2e/images/sidecar),
# and a Service. Each pod's sidecar admits SIDECAR_MAXCONN requests in flight; each
# request holds the app HOLD_MS ms and burns CPU_US us of its CPU, so a pod admits
# SIDECAR_MAXCONN / HOLD_MS requests per second while its app reads about 36% of its
# CPU request (APP_CPU_REQUEST is sized so). Requests beyond the limit queue in the
# sidecar and get a 503 after QUEUE_TIMEOUT.
# edge-flows: each pod also keeps POOL_CONNS connections to a downstream through the
# lab's load balancer (lb_config), and needs them to serve (POOL_REQUIRED).

# pool_env POOL_ADDR: the app's pooled connections to POOL_ADDR (nothing without one).
pool_env() {
  [ -n "$1" ] || return 0
  cat <<EOF
        - {name: POOL_ADDR, value: "$1"}
        - {name: POOL_CONNS, value: "$POOL_CONNS"}
        - {name: POOL_REQUIRED, value: "1"}
EOF
}

# slow_start: with SLOW_START_S > 0, an init container that sleeps that long (the
# sidecar's image has a shell's sleep; the lab app's has only the app), so a new pod
# stays in phase Pending, its pool not open, as a pod pulling its image would.
slow_start() {
  [ "${SLOW_START_S:-0}" -gt 0 ] || return 0
  cat <<EOF
      initContainers:
      - name: slow-start
        image: $MESHSCALER_E2E_SIDECAR_IMAGE
        imagePullPolicy: Never
        command: [sleep, "$SLOW_START_S"]
        resources: {requests: {cpu: 1m, memory: 4Mi}, limits: {cpu: 50m, memory: 16Mi}}
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
EOF
}

# workload NAMESPACE [POOL_ADDR]: the Deployment and Service `web`.
workload() {
  cat <<EOF
apiVersion: v1
kind: Namespace
metadata: {name: $1, labels: {lab.meshscaler.io/scenario: $SCENARIO}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: $1, labels: {app: web, lab.meshscaler.io/scenario: $SCENARIO}}
spec:
  replicas: $START_REPLICAS
  selector: {matchLabels: {app: web}}
  template:
    metadata:
      labels: {app: web}
      annotations: {prometheus.io/scrape: "true", prometheus.io/port: "9101", prometheus.io/path: /metrics}
    spec:
      terminationGracePeriodSeconds: 5
      enableServiceLinks: false
      automountServiceAccountToken: false
$(slow_start)
      containers:
      - name: app
        image: $LAB_APP_IMAGE
        imagePullPolicy: Never
        env:
        - {name: WORKERS, value: "$APP_WORKERS"}
        - {name: CPU_US, value: "$CPU_US"}
        - {name: HOLD_MS, value: "$HOLD_MS"}
        - {name: STARTUP_DELAY_SECONDS, value: "$STARTUP_DELAY"}
$(pool_env "${2:-}")
        ports: [{name: app, containerPort: 8080}]
        resources: {requests: {cpu: "$APP_CPU_REQUEST", memory: 16Mi}, limits: {cpu: 500m, memory: 64Mi}}
        # Ready once the app's start-up delay has passed. The kubelet asks the app itself, as
        # Istio's rewritten probes do: a probe through the sidecar would wait in its queue
        # behind the limit and take a saturated pod out of the Service.
        readinessProbe: {httpGet: {path: /readyz, port: app}, periodSeconds: 1, failureThreshold: 2}
        livenessProbe: {httpGet: {path: /healthz, port: app}, periodSeconds: 10}
        securityContext: {allowPrivilegeEscalation: false, readOnlyRootFilesystem: true, capabilities: {drop: [ALL]}}
      - name: sidecar
        image: $MESHSCALER_E2E_SIDECAR_IMAGE
        imagePullPolicy: Never
        env:
        - {name: SIDECAR_MAXCONN, value: "$SIDECAR_MAXCONN"}
        - {name: QUEUE_TIMEOUT, value: "$QUEUE_TIMEOUT"}
        ports: [{name: http, containerPort: 8000}, {name: metrics, containerPort: 9101}]
        resources: {requests: {cpu: "$SIDECAR_CPU_REQUEST", memory: 16Mi}, limits: {cpu: 500m, memory: 128Mi}}
        readinessProbe: {httpGet: {path: /healthz, port: metrics}, periodSeconds: 1, failureThreshold: 2}
        livenessProbe: {httpGet: {path: /healthz, port: metrics}, periodSeconds: 10}
        securityContext: {allowPrivilegeEscalation: false, capabilities: {drop: [ALL]}}
---
apiVersion: v1
kind: Service
metadata: {name: web, namespace: $1, labels: {app: web}}
spec:
  selector: {app: web}
  ports: [{name: http, port: 80, targetPort: http}]
EOF
}

# The same scaling behaviour for both arms (autoscaling/v2 fields): scale up at once
# (no stabilization) by up to 400% per 15 s, so neither arm is held back by a rate
# limit the other does not have; scale down as HPA's default (300 s window).
behavior() {
  cat <<EOF
  behavior:
    scaleUp:
      stabilizationWindowSeconds: 0
      selectPolicy: Max
      policies: [{type: Percent, value: 400, periodSeconds: 15}, {type: Pods, value: 4, periodSeconds: 15}]
    scaleDown:
      stabilizationWindowSeconds: 300
      policies: [{type: Percent, value: 100, periodSeconds: 15}]
EOF
}

# Arm (a): the autoscaler of the incident, the real HPA of kube-controller-manager on
# the application container's CPU (metrics-server), against its request.
hpa() {
  cat <<EOF
apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata: {name: web, namespace: $1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: $START_REPLICAS
  maxReplicas: $MAX_REPLICAS
  metrics:
  - type: ContainerResource
    containerResource: {name: cpu, container: app, target: {type: Utilization, averageUtilization: $TARGET_UTILIZATION}}
$(behavior)
EOF
}

# Arm (b): meshscaler on the sidecar's in-flight requests against its maxconn
# (SidecarConcurrency, proxy haproxy), with saturation correction: the rate the
# sidecars refuse over the rate they admit reveals the demand a saturated proxy
# cannot show (docs/metrics.md). Refused: HAProxy's backend connection errors, which
# count the requests that waited QUEUE_TIMEOUT in its queue and got a 503 (and any
# failed connect to the app); admitted: the sessions its server (the app) took. Both
# are rates, so their ratio is offered / admitted. (The queue's length is a count of
# waiting requests, not a rate: against in-flight requests it would overstate demand
# by about QUEUE_TIMEOUT / HOLD_MS, 5x here.)
# retry_share_query EDGE_PROXY: the retry share as the arm's proxy counts it. The load
# client marks every retry with `x-retry-attempt: N` (as Envoy marks its attempts with
# x-envoy-attempt-count); the edge HAProxy in front of the arm (edge_config) sends those
# to a backend of their own, EDGE_PROXY-retried, so its exporter counts retried requests
# apart from first attempts: retries / all requests, from HAProxy's own counters.
retry_share_query() {
  printf '%s' "sum(rate(haproxy_backend_http_requests_total{proxy=\"$1-retried\"}[${RATE_WINDOW}])) / sum(rate(haproxy_backend_http_requests_total{proxy=~\"$1|$1-retried\"}[${RATE_WINDOW}]))"
}

# retry_guard EDGE_PROXY: the retry-storm guard, with the retry share read from that
# edge proxy's counters (retry_share_query). Nothing without a proxy.
retry_guard() {
  [ -n "$1" ] || return 0
  cat <<EOF
    retryStorm:
      retryShareQuery: '$(retry_share_query "$1")'
      threshold: $RETRY_THRESHOLD
EOF
}

# downstream_guard LB_PROXY [BUDGET]: the downstream guardrail on the flow table of the
# lab's load balancer (the frontend LB_PROXY of lb_config): every replica adds POOL_CONNS
# flows; never scale out past 70% of its maxconn. With BUDGET, the table's room is one
# shared budget of that name (shared-edge). Nothing without a proxy.
downstream_guard() {
  [ -n "$1" ] || return 0
  cat <<EOF
    downstream:
    - name: edge-lb
      usageQuery: 'sum(haproxy_frontend_current_sessions{proxy="$1"})'
      limitQuery: 'sum(haproxy_frontend_limit_sessions{proxy="$1"})'
      perReplica: $POOL_CONNS
      maxUtilization: $LB_MAX_UTILIZATION
EOF
  [ -z "${2:-}" ] || printf '      budget: %s\n' "$2"
}

# mas NAMESPACE [EDGE_PROXY [LB_PROXY [BUDGET]]]: the MeshAutoscaler `web`; with the
# retry-storm guard when the arm's edge proxy is given, the downstream guardrail when a
# balancer's frontend is (sharing BUDGET when one is named).
mas() {
  cat <<EOF
apiVersion: autoscaling.meshscaler.io/v1alpha1
kind: MeshAutoscaler
metadata: {name: web, namespace: $1}
spec:
  scaleTargetRef: {apiVersion: apps/v1, kind: Deployment, name: web}
  minReplicas: $START_REPLICAS
  maxReplicas: $MAX_REPLICAS
  metrics:
  - name: sidecar
    type: SidecarConcurrency
    sidecarConcurrency: {proxy: haproxy}
    target: {type: Utilization, averageUtilization: $TARGET_UTILIZATION}
  guardrails:
    saturation:
    - metric: sidecar
      rejectedQuery: 'sum(rate(haproxy_backend_connection_errors_total{namespace="{{namespace}}",pod=~"{{podRegex}}",proxy="app"}[${RATE_WINDOW}]))'
      admittedQuery: 'sum(rate(haproxy_server_sessions_total{namespace="{{namespace}}",pod=~"{{podRegex}}",proxy="app"}[${RATE_WINDOW}]))'
$(retry_guard "${2:-}")
$(downstream_guard "${3:-}" "${4:-}")
$(behavior)
EOF
}

# mas_no_reservation ARGS...: mas ARGS with the per-object opt-out of the starting-pod
# reservation (docs/controller.md, "Pausing and conflicts"): edge-flows' slow-start
# variant, its arm (a).
mas_no_reservation() {
  mas "$@" | sed -e 's|^metadata: {name: web, namespace: \([^,}]*\)}$|metadata: {name: web, namespace: \1, annotations: {autoscaling.meshscaler.io/starting-pod-reservation: "false"}}|'
}

# Shadow mode in the HPA arm: the same MeshAutoscaler, dryRun, beside the HPA on its
# Deployment. It writes nothing; its status.hpaComparison records both desired counts
# every sync and who raised the count first (docs/migration.md, step 2).
shadow_mas() {
  mas "$1" | sed -e 's/^metadata: {name: web,/metadata: {name: shadow,/' \
    -e 's/^\(  maxReplicas: .*\)$/\1\n  dryRun: true/'
}

# haproxy_head EXPORTER_PORT [DEFAULTS_LINE]...: the start of the lab's HAProxy
# configurations: no process-wide limit (each frontend has its own), HTTP defaults,
# and the Prometheus exporter on SCRAPE_HOST:EXPORTER_PORT (run.sh: where the
# environment's Prometheus reaches the host, 127.0.0.1 for e2e/local's).
haproxy_head() {
  local eport="$1" line
  shift
  printf 'global\n  maxconn 8000\ndefaults\n  mode http\n  timeout connect 2s\n  timeout client 30s\n  timeout server 30s\n'
  for line in "$@"; do printf '%s\n' "$line"; done
  printf 'frontend exporter\n  bind %s:%s\n  http-request use-service prometheus-exporter if { path /metrics }\n' "${SCRAPE_HOST:-127.0.0.1}" "$eport"
}

# The edge: one HAProxy on the host in front of both Services (a frontend each), as an
# ingress or the client's own mesh proxy would be. It balances per request: the
# client's connections stay open (keep-alive), but each request goes to the Service
# on a connection of its own (http-server-close), for which kube-proxy picks a Ready
# pod at random. Without it, keep-alive connections stay on the pods that existed
# when they were opened: measured here, 12 Ready pods after a scale-up from 2, and
# the ~400 connections of a saturated peak all still on the first 2 (http-reuse
# always with max-reuse 10 gave the same).
# No limit binds here: the flow table of the edge-flows scenario is lb_config's.
# Retries (requests with x-retry-attempt) go to NAME-retried, the same Service: the
# two backends' request counters give the retry share (retry_share_query).
edge_config() { # edge_config EXPORTER_PORT NAME:PORT:SERVICE_IP...
  local eport="$1" spec name port ip
  shift
  haproxy_head "$eport" "  timeout queue 5s" "  option http-server-close"
  for spec in "$@"; do
    IFS=: read -r name port ip <<<"$spec"
    cat <<EOF
frontend $name
  bind 127.0.0.1:$port
  maxconn 4000
  use_backend $name-retried if { req.hdr(x-retry-attempt) -m found }
  default_backend $name
backend $name
  server svc $ip:80
backend $name-retried
  server svc $ip:80
EOF
  done
}

# The edge-flows scenario's load balancer: the one the pods' downstream connections
# go through, whose flow table (a frontend's maxconn, LB_FLOWS entries per arm) is the
# next limit. A frontend per arm with two ports: POOL_PORT on the node's address, for
# the pods' pooled connections (kept open), and BYSTANDER_PORT on the host, for a
# bystander: another service's clients behind the same balancer, each request on a
# new connection (a new flow). Both are answered by the balancer itself: what is
# measured is whether a flow gets in. When the table is full, new flows wait in the
# kernel's accept queue: a new pod gets no connection and the bystander times out.
lb_config() { # lb_config EXPORTER_PORT NODE_IP NAME:POOL_PORT:BYSTANDER_PORT...
  local eport="$1" node_ip="$2" spec name pool bystander
  shift 2
  haproxy_head "$eport"
  for spec in "$@"; do
    IFS=: read -r name pool bystander <<<"$spec"
    cat <<EOF
frontend $name
  bind $node_ip:$pool
  bind 127.0.0.1:$bystander
  maxconn $LB_FLOWS
  http-request set-var(txn.bystander) bool(true) if { dst_port $bystander }
  http-after-response set-header Connection close if { var(txn.bystander) -m bool }
  http-request return status 200 content-type text/plain string "ok"
EOF
  done
}
