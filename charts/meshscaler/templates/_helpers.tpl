{{/*
Names, labels and the checks that span several values. Every object the chart
creates takes its name from meshscaler.fullname and its labels from
meshscaler.labels; selectors use only meshscaler.selectorLabels (name and
instance), which never change across upgrades.
*/}}

{{/* The chart name, or nameOverride. */}}
{{- define "meshscaler.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The name of the objects: fullnameOverride, else the release name when it
already contains the chart name ("meshscaler" stays "meshscaler"), else
"<release>-<chart>". At most 63 characters (DNS label).
*/}}
{{- define "meshscaler.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* "meshscaler-0.1.0", for the helm.sh/chart label. */}}
{{- define "meshscaler.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every object. */}}
{{- define "meshscaler.labels" -}}
helm.sh/chart: {{ include "meshscaler.chart" . }}
{{ include "meshscaler.selectorLabels" . }}
app.kubernetes.io/version: {{ include "meshscaler.imageTag" . | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/component: controller
app.kubernetes.io/part-of: meshscaler
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Labels that select the controller's pods. */}}
{{- define "meshscaler.selectorLabels" -}}
app.kubernetes.io/name: {{ include "meshscaler.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* The ServiceAccount the controller runs as. */}}
{{- define "meshscaler.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "meshscaler.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The image tag: image.tag, else the chart's appVersion. */}}
{{- define "meshscaler.imageTag" -}}
{{- toString (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{/* repository:tag, or repository:tag@digest when a digest pins the image. */}}
{{- define "meshscaler.image" -}}
{{- $ref := printf "%s:%s" .Values.image.repository (include "meshscaler.imageTag" .) }}
{{- if .Values.image.digest }}
{{- $ref = printf "%s@%s" $ref .Values.image.digest }}
{{- end }}
{{- $ref }}
{{- end }}

{{/*
Whether the controller takes a Lease: leader election on and not dry-run
(a dry-run controller writes nothing, not even a Lease, and ignores
--leader-elect).
*/}}
{{- define "meshscaler.leaseEnabled" -}}
{{- if and .Values.leaderElection.enabled (not .Values.controller.dryRun) }}true{{ end }}
{{- end }}

{{/*
The PromQL label matchers that select the controller's own series in the
alerts: prometheusRule.selector, else the job a ServiceMonitor scrapes it as
(the Service's name).
*/}}
{{- define "meshscaler.ruleSelector" -}}
{{- default (printf "job=%q" (include "meshscaler.fullname" .)) .Values.prometheusRule.selector }}
{{- end }}

{{/* The port of prometheus.url: explicit, else 443 for https and 80 for http. */}}
{{- define "meshscaler.prometheusPort" -}}
{{- $u := urlParse .Values.prometheus.url }}
{{- $hostport := splitList ":" (get $u "host") }}
{{- if and (gt (len $hostport) 1) (regexMatch "^[0-9]+$" (last $hostport)) }}
{{- last $hostport }}
{{- else if eq (get $u "scheme") "https" }}443
{{- else }}80
{{- end }}
{{- end }}

{{/*
Checks across values that the schema cannot express. Each fails with a
message that names the values to change.
*/}}
{{- define "meshscaler.validate" -}}
{{- if not .Values.prometheus.url }}
{{- fail "prometheus.url is required: the Prometheus base URL, e.g. helm install meshscaler charts/meshscaler --set prometheus.url=http://prometheus.monitoring:9090" }}
{{- end }}
{{- if get (urlParse .Values.prometheus.url) "userinfo" }}
{{- fail "prometheus.url: no user or password in the URL, it would be readable in the pod spec; use prometheus.basicAuth with a Secret" }}
{{- end }}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) (not .Values.controller.dryRun) }}
{{- fail (printf "leaderElection.enabled=false needs replicaCount <= 1 (it is %v): two controllers without election would both scale the same workloads" .Values.replicaCount) }}
{{- end }}
{{- if and .Values.prometheus.bearerToken.secretName .Values.prometheus.basicAuth.username }}
{{- fail "prometheus.bearerToken.secretName and prometheus.basicAuth.username cannot be used together: choose a bearer token or basic auth" }}
{{- end }}
{{- if and .Values.prometheus.basicAuth.username (not .Values.prometheus.basicAuth.passwordSecret.name) }}
{{- fail "prometheus.basicAuth.username needs prometheus.basicAuth.passwordSecret.name (a Secret holding the password)" }}
{{- end }}
{{- if and .Values.prometheus.basicAuth.passwordSecret.name (not .Values.prometheus.basicAuth.username) }}
{{- fail "prometheus.basicAuth.passwordSecret.name needs prometheus.basicAuth.username" }}
{{- end }}
{{- if and .Values.prometheus.ca.configMapName .Values.prometheus.ca.secretName }}
{{- fail "prometheus.ca: set configMapName or secretName, not both" }}
{{- end }}
{{- range .Values.prometheus.headers }}
{{- if regexMatch "^(?i)(authorization|proxy-authorization)\\s*:" . }}
{{- fail "prometheus.headers: no Authorization header here, it would be readable in the pod spec; use prometheus.bearerToken.secretName or prometheus.basicAuth" }}
{{- end }}
{{- end }}
{{- end }}

{{/*
Where /metrics' serving certificate comes from (metrics.secure only): secret (the
user's certSecretName), helm (genCA/genSignedCert), certManager, or none (the
controller's own self-signed certificate). "" without metrics.secure.
*/}}
{{- define "meshscaler.metricsCertSource" -}}
{{- if .Values.metrics.secure }}
{{- if .Values.metrics.certSecretName }}secret
{{- else if eq .Values.metrics.certificate.source "auto" }}
{{- if .Capabilities.APIVersions.Has "cert-manager.io/v1" }}certManager{{ else }}helm{{ end }}
{{- else }}{{ .Values.metrics.certificate.source }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Secret holding /metrics' certificate (tls.crt, tls.key, ca.crt); "" for none. */}}
{{- define "meshscaler.metricsCertSecret" -}}
{{- $src := include "meshscaler.metricsCertSource" . }}
{{- if eq $src "secret" }}{{ .Values.metrics.certSecretName }}
{{- else if or (eq $src "helm") (eq $src "certManager") }}{{ include "meshscaler.fullname" . }}-metrics-tls
{{- end }}
{{- end }}

{{/* The names /metrics' certificate is made for: the Service's, short to fully qualified. */}}
{{- define "meshscaler.metricsDNSNames" -}}
{{- $svc := include "meshscaler.fullname" . }}
{{- $ns := .Release.Namespace }}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.cluster.local" $svc $ns) | toJson }}
{{- end }}

{{/*
The chart-made certificate of /metrics (source helm) as JSON {"tls.crt", "tls.key",
"ca.crt"} (base64, as in a Secret's data): the Secret's own when it exists, so
upgrades keep it, else a new CA (genCA) and a certificate it signs for the
Service's names (genSignedCert). Made once per render and kept in .Values (which
every template shares), so the Secret and the pods' checksum see the same one.
*/}}
{{- define "meshscaler.metricsTLSData" -}}
{{- if not (hasKey .Values "_metricsTLS") }}
{{- $name := printf "%s-metrics-tls" (include "meshscaler.fullname" .) }}
{{- $existing := lookup "v1" "Secret" .Release.Namespace $name }}
{{- $data := dict }}
{{- if and $existing $existing.data (hasKey $existing.data "tls.crt") (hasKey $existing.data "tls.key") (hasKey $existing.data "ca.crt") }}
{{- $data = dict "tls.crt" (index $existing.data "tls.crt") "tls.key" (index $existing.data "tls.key") "ca.crt" (index $existing.data "ca.crt") }}
{{- else }}
{{- $days := int .Values.metrics.certificate.validityDays }}
{{- $ca := genCA (printf "%s-metrics-ca" (include "meshscaler.fullname" .)) $days }}
{{- $dns := include "meshscaler.metricsDNSNames" . | fromJsonArray }}
{{- $cert := genSignedCert (index $dns 2) nil $dns $days $ca }}
{{- $data = dict "tls.crt" ($cert.Cert | b64enc) "tls.key" ($cert.Key | b64enc) "ca.crt" ($ca.Cert | b64enc) }}
{{- end }}
{{- $_ := set .Values "_metricsTLS" $data }}
{{- end }}
{{- toJson (get .Values "_metricsTLS") }}
{{- end }}

{{/*
The controller's rules on the objects it watches and writes (the ClusterRole's,
or the Role's in controller.watchNamespace); the /metrics reviews are apart.
*/}}
{{- define "meshscaler.rbacRules" -}}
{{- $dry := .Values.controller.dryRun -}}
# The controller's own resource: watch specs, write status only.
- apiGroups: ["autoscaling.meshscaler.io"]
  resources: ["meshautoscalers"]
  verbs: ["get", "list", "watch"]
{{- if not $dry }}
- apiGroups: ["autoscaling.meshscaler.io"]
  resources: ["meshautoscalers/status"]
  verbs: ["get", "update", "patch"]
{{- end }}
# Scale targets, only through their scale subresource (never the whole object).
{{- range .Values.rbac.scaleTargets }}
- apiGroups: [{{ .apiGroup | quote }}]
  resources: [{{ range $i, $r := .resources }}{{ if $i }}, {{ end }}{{ printf "%s/scale" $r | quote }}{{ end }}]
  verbs: {{ if $dry }}["get"]{{ else }}["get", "update", "patch"]{{ end }}
{{- end }}
# The built-in workloads and their pods, read through watched caches: a
# round reads replicas, selectors and pod readiness from memory instead of
# one GET and one LIST per object (the caches keep only those fields).
- apiGroups: ["apps"]
  resources: ["deployments", "statefulsets", "replicasets"]
  verbs: ["get", "list", "watch"]
- apiGroups: [""]
  resources: ["pods"]
  verbs: ["get", "list", "watch"]
{{- if not $dry }}
# Conflict detection: a HorizontalPodAutoscaler that targets the same workload.
- apiGroups: ["autoscaling"]
  resources: ["horizontalpodautoscalers"]
  verbs: ["get", "list", "watch"]
# Events are the user interface of `kubectl describe` (both event APIs).
- apiGroups: [""]
  resources: ["events"]
  verbs: ["create", "patch"]
- apiGroups: ["events.k8s.io"]
  resources: ["events"]
  verbs: ["create", "patch"]
{{- end }}
{{- end }}
