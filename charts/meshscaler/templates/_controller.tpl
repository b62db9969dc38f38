{{/*
The controller's container: its flags, volumes and mounts (deployment.yaml).

Flags are one list item each, in --flag=value form. Secrets are never values
here: only the paths of the read-only files they are mounted as.
*/}}
{{- define "meshscaler.args" -}}
- controller
- {{ printf "--prometheus-url=%s" .Values.prometheus.url | quote }}
- --metrics-bind-address=:8080
- --health-probe-bind-address=:8081
{{- if and .Values.metrics.certSecretName (not .Values.metrics.secure) }}
{{- fail "metrics.certSecretName needs metrics.secure=true (the certificate serves HTTPS /metrics only)" }}
{{- end }}
{{- if .Values.metrics.secure }}
- --metrics-secure=true
{{- if include "meshscaler.metricsCertSecret" . }}
- --metrics-cert-dir=/etc/meshscaler/metrics-tls
{{- end }}
{{- end }}
- --sync-period={{ .Values.controller.syncPeriod }}
- --concurrent-syncs={{ .Values.controller.concurrentSyncs }}
- --log-format={{ .Values.controller.logFormat }}
- --log-level={{ .Values.controller.logLevel }}
- --user-queries={{ .Values.controller.userQueries }}
{{- with .Values.controller.watchNamespace }}
- --namespace={{ . }}
{{- end }}
{{- if .Values.controller.dryRun }}
- --dry-run=true
- --output={{ .Values.controller.dryRunOutput }}
{{- end }}
{{- if include "meshscaler.leaseEnabled" . }}
- --leader-elect=true
- --leader-election-id={{ .Values.leaderElection.id }}
- --leader-election-namespace={{ .Release.Namespace }}
{{- end }}
{{- if ne (toString .Values.controller.kubeApiQps) "" }}
- --kube-api-qps={{ .Values.controller.kubeApiQps }}
{{- end }}
{{- if ne (toString .Values.controller.kubeApiBurst) "" }}
- --kube-api-burst={{ .Values.controller.kubeApiBurst }}
{{- end }}
{{- with .Values.prometheus.timeout }}
- --prometheus-timeout={{ . }}
{{- end }}
{{- if .Values.prometheus.insecureSkipVerify }}
- --prometheus-insecure-skip-verify=true
{{- end }}
{{- range .Values.prometheus.headers }}
- {{ printf "--prometheus-header=%s" . | quote }}
{{- end }}
{{- with .Values.prometheus.bearerToken.secretName }}
- --prometheus-bearer-token-file=/etc/meshscaler/prometheus/bearer-token/{{ $.Values.prometheus.bearerToken.key }}
{{- end }}
{{- with .Values.prometheus.basicAuth.username }}
- {{ printf "--prometheus-basic-auth-username=%s" . | quote }}
- --prometheus-basic-auth-password-file=/etc/meshscaler/prometheus/basic-auth/{{ $.Values.prometheus.basicAuth.passwordSecret.key }}
{{- end }}
{{- if or .Values.prometheus.ca.configMapName .Values.prometheus.ca.secretName }}
- --prometheus-ca-file=/etc/meshscaler/prometheus/ca/{{ .Values.prometheus.ca.key }}
{{- end }}
{{- range .Values.extraArgs }}
- {{ . | quote }}
{{- end }}
{{- end }}

{{/* Mounts of the Prometheus credentials and CA, then extraVolumeMounts. */}}
{{- define "meshscaler.volumeMounts" -}}
{{- if .Values.prometheus.bearerToken.secretName }}
- name: prometheus-bearer-token
  mountPath: /etc/meshscaler/prometheus/bearer-token
  readOnly: true
{{- end }}
{{- if .Values.prometheus.basicAuth.passwordSecret.name }}
- name: prometheus-basic-auth
  mountPath: /etc/meshscaler/prometheus/basic-auth
  readOnly: true
{{- end }}
{{- if or .Values.prometheus.ca.configMapName .Values.prometheus.ca.secretName }}
- name: prometheus-ca
  mountPath: /etc/meshscaler/prometheus/ca
  readOnly: true
{{- end }}
{{- if include "meshscaler.metricsCertSecret" . }}
- name: metrics-tls
  mountPath: /etc/meshscaler/metrics-tls
  readOnly: true
{{- end }}
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* Volumes of the Prometheus credentials and CA (one key each), then extraVolumes. */}}
{{- define "meshscaler.volumes" -}}
{{- with .Values.prometheus.bearerToken.secretName }}
- name: prometheus-bearer-token
  secret:
    secretName: {{ . }}
    items:
      - key: {{ $.Values.prometheus.bearerToken.key }}
        path: {{ $.Values.prometheus.bearerToken.key }}
{{- end }}
{{- with .Values.prometheus.basicAuth.passwordSecret.name }}
- name: prometheus-basic-auth
  secret:
    secretName: {{ . }}
    items:
      - key: {{ $.Values.prometheus.basicAuth.passwordSecret.key }}
        path: {{ $.Values.prometheus.basicAuth.passwordSecret.key }}
{{- end }}
{{- with .Values.prometheus.ca.configMapName }}
- name: prometheus-ca
  configMap:
    name: {{ . }}
    items:
      - key: {{ $.Values.prometheus.ca.key }}
        path: {{ $.Values.prometheus.ca.key }}
{{- end }}
{{- with .Values.prometheus.ca.secretName }}
- name: prometheus-ca
  secret:
    secretName: {{ . }}
    items:
      - key: {{ $.Values.prometheus.ca.key }}
        path: {{ $.Values.prometheus.ca.key }}
{{- end }}
{{- if .Values.metrics.secure }}
{{- with include "meshscaler.metricsCertSecret" . }}
- name: metrics-tls
  secret:
    secretName: {{ . }}
    items:
      - key: tls.crt
        path: tls.crt
      - key: tls.key
        path: tls.key
{{- end }}
{{- end }}
{{- with .Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end }}
