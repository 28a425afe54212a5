{{/*
The names are fixed, as in deploy/: the ClusterRoles and their bindings are cluster-wide, and one
ringfire serves a cluster's Volcano API, so there is one release per cluster.
*/}}

{{/* ringfire's container image. */}}
{{- define "ringfire.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}

{{/* The ring's etcd client URLs, comma-separated: the in-chart members, or the external ones. */}}
{{- define "ringfire.etcdEndpoints" -}}
{{- if .Values.etcd.enabled -}}
{{- $urls := list -}}
{{- range $i := until (int .Values.etcd.replicas) -}}
{{- $urls = append $urls (printf "https://ringfire-etcd-%d.ringfire-etcd.$(POD_NAMESPACE).svc:2379" $i) -}}
{{- end -}}
{{- join "," $urls -}}
{{- else -}}
{{- if not .Values.etcd.external.endpoints -}}
{{- fail "etcd.enabled is false: set etcd.external.endpoints to the ring's etcd" -}}
{{- end -}}
{{- join "," .Values.etcd.external.endpoints -}}
{{- end -}}
{{- end }}

{{/* The in-chart etcd's --initial-cluster: every member by its stable name. */}}
{{- define "ringfire.etcdInitialCluster" -}}
{{- $members := list -}}
{{- range $i := until (int .Values.etcd.replicas) -}}
{{- $members = append $members (printf "ringfire-etcd-%d=https://ringfire-etcd-%d.ringfire-etcd.$(POD_NAMESPACE).svc:2380" $i $i) -}}
{{- end -}}
{{- join "," $members -}}
{{- end }}

{{/*
--controllers, or nothing for ringfire's default set. The default set is written here too, for
scheduler.enabled with no controllers named; deploy/helm_test.go checks it is ringfire's.
*/}}
{{- define "ringfire.defaultControllers" -}}
job,queue,podgroup,jobflow,cronjob,batchjob
{{- end }}
{{- define "ringfire.controllers" -}}
{{- $list := .Values.controllers -}}
{{- if and .Values.scheduler.enabled (not $list) -}}
{{- $list = splitList "," (include "ringfire.defaultControllers" .) -}}
{{- end -}}
{{- if and .Values.scheduler.enabled (not (has "scheduler" $list)) -}}
{{- $list = append $list "scheduler" -}}
{{- end -}}
{{- join "," $list -}}
{{- end }}

{{/*
"true" when the replicas run the gang scheduler (scheduler.enabled, or scheduler among the
controllers named), else empty: its ClusterRole is rendered only then.
*/}}
{{- define "ringfire.schedulerOn" -}}
{{- if has "scheduler" (splitList "," (include "ringfire.controllers" .)) }}true{{ end -}}
{{- end }}
