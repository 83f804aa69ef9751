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

{{/* Labels of the CRDs and the shard controller: the release's, without the scheduler component. */}}
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

{{/* "true" when the scheduler runs one Deployment per node shard; fails on a list it cannot run. */}}
{{- define "py-volcano.sharded" -}}
{{- if .Values.sharding.enabled }}
{{- $names := list }}
{{- range .Values.sharding.shards }}
{{- if has .name $names }}
{{- fail (printf "sharding.shards: shard %q is listed twice" .name) }}
{{- end }}
{{- $names = append $names .name }}
{{- end }}
{{- if not $names }}
{{- fail "sharding.shards must list at least one shard when sharding.enabled is true" }}
{{- end -}}
true
{{- end }}
{{- end }}

{{/* The scheduler's shards as a YAML list: sharding.shards, or one shard without a name (no sharding). */}}
{{- define "py-volcano.shardList" -}}
{{- if include "py-volcano.sharded" . }}
{{- toYaml .Values.sharding.shards }}
{{- else -}}
- {}
{{- end }}
{{- end }}

{{/* The label that tells one shard's scheduler pods from another's; its value is the shard's name. */}}
{{- define "py-volcano.shardLabel" -}}
scheduling.py-volcano.io/node-shard
{{- end }}

{{/* Name of the scheduler Deployment (and PodDisruptionBudget) of shard (list root shard): the full name,
suffixed with the shard's name when there is one. */}}
{{- define "py-volcano.shardFullname" -}}
{{- $root := index . 0 }}
{{- $shard := index . 1 }}
{{- if $shard.name }}
{{- printf "%s-%s" (include "py-volcano.fullname" $root) $shard.name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- include "py-volcano.fullname" $root }}
{{- end }}
{{- end }}

{{/* Leader-election Lease of shard (list root shard): leaderElection.leaseName, suffixed with the shard's
name when there is one, so that each shard elects its own leader. */}}
{{- define "py-volcano.leaseName" -}}
{{- $root := index . 0 }}
{{- $shard := index . 1 }}
{{- if $shard.name }}
{{- printf "%s-%s" $root.Values.leaderElection.leaseName $shard.name }}
{{- else }}
{{- $root.Values.leaderElection.leaseName }}
{{- end }}
{{- end }}

{{- define "py-volcano.shardControllerName" -}}
{{- printf "%s-shard-controller" (include "py-volcano.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* ServiceAccount of the shard controller: its own when the chart creates ServiceAccounts. */}}
{{- define "py-volcano.shardControllerServiceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- include "py-volcano.shardControllerName" . }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}
