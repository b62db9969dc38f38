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
