{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "py-volcano.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Full name of the release's objects: the release name when it already holds the chart name. */}}
{{- define "py-volcano.fullname" -}}
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

{{- define "py-volcano.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "py-volcano.selectorLabels" -}}
app.kubernetes.io/name: {{ include "py-volcano.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "py-volcano.labels" -}}
helm.sh/chart: {{ include "py-volcano.chart" . }}
{{ include "py-volcano.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: scheduler
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* Labels of the CRDs: the release's, without the scheduler component. */}}
{{- define "py-volcano.crdLabels" -}}
helm.sh/chart: {{ include "py-volcano.chart" . }}
{{ include "py-volcano.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "py-volcano.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "py-volcano.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "py-volcano.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "py-volcano.configMapName" -}}
{{- printf "%s-configmap" (include "py-volcano.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* "true" when leader election is on; fails when several replicas would run without it. */}}
{{- define "py-volcano.leaderElect" -}}
{{- if and (gt (int .Values.replicaCount) 1) (not .Values.leaderElection.enabled) }}
{{- fail "leaderElection.enabled must be true when replicaCount > 1: replicas without leader election would schedule the same pods" }}
{{- end }}
{{- if .Values.leaderElection.enabled }}true{{ end }}
{{- end }}

{{/* "true" when a PodDisruptionBudget is rendered. */}}
{{- define "py-volcano.pdbEnabled" -}}
{{- if or .Values.podDisruptionBudget.enabled (gt (int .Values.replicaCount) 1) }}true{{ end }}
{{- end }}
