{{/* The name of the ServiceAccount, (Cluster)Role(Binding)s and Deployment. */}}
{{- define "ork.name" -}}
{{- .Values.name | default .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* Labels that select ork's pods. */}}
{{- define "ork.selectorLabels" -}}
app.kubernetes.io/name: ork
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{/* Labels on every object of the chart. */}}
{{- define "ork.labels" -}}
{{ include "ork.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{/* The ConfigMap holding the Katalog: an existing one, or the chart's. */}}
{{- define "ork.katalogConfigMap" -}}
{{- .Values.katalog.existingConfigMap | default (printf "%s-katalog" (include "ork.name" .)) -}}
{{- end -}}

{{/* The RBAC values were generated for one namespace: refuse another. */}}
{{- define "ork.checkNamespace" -}}
{{- if and .Values.rbac.create (ne .Values.rbac.namespace .Release.Namespace) -}}
{{- fail (printf "rbac was generated for namespace %q but the release installs into %q: run `ork generate values -k katalog.yaml --namespace %s` (the RBAC ork needs depends on its namespace)" .Values.rbac.namespace .Release.Namespace .Release.Namespace) -}}
{{- end -}}
{{- end -}}
