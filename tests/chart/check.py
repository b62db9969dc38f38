#!/usr/bin/env python3
"""check.py - assertions on the chart's rendered output, for tests/chart/run.sh.

    check.py render CASE FILE     key facts of `helm template` output for one value set
    check.py series CHART_DIR RULES_FILE
                                  the dashboard parses; the series it and the rules read
                                  are exactly those of series.txt
    check.py values CHART_DIR     every value is documented (# --) and in README.md
    check.py yaml FILE...         each file parses as YAML

Prints nothing and exits 0 when every assertion holds; otherwise one line per
failed assertion on stdout and exit 1.
"""
import base64
import json
import os
import subprocess
import tempfile
import re
import sys

import yaml

errors = []


def expect(cond, message):
    if not cond:
        errors.append(message)
    return cond


def load(path):
    with open(path) as f:
        return [d for d in yaml.safe_load_all(f) if d]


def by_kind(docs, kind):
    return [d for d in docs if d.get("kind") == kind]


def one(docs, kind):
    found = by_kind(docs, kind)
    expect(len(found) == 1, f"want one {kind}, found {len(found)}")
    return found[0] if found else {}


def container(docs):
    dep = one(docs, "Deployment")
    cs = dep.get("spec", {}).get("template", {}).get("spec", {}).get("containers", [{}])
    return dep, cs[0]


STANDARD_LABELS = ["helm.sh/chart", "app.kubernetes.io/name", "app.kubernetes.io/instance",
                   "app.kubernetes.io/version", "app.kubernetes.io/managed-by",
                   "app.kubernetes.io/component"]
WRITE_VERBS = {"create", "update", "patch", "delete", "deletecollection", "*"}


def check_security(pod_spec, c, what):
    psc = pod_spec.get("securityContext", {})
    expect(psc.get("runAsNonRoot") is True, f"{what}: pod runAsNonRoot is not true")
    expect(psc.get("runAsUser") == 65532, f"{what}: pod runAsUser is not 65532")
    expect(psc.get("runAsGroup") == 65532, f"{what}: pod runAsGroup is not 65532")
    expect(psc.get("seccompProfile", {}).get("type") == "RuntimeDefault",
           f"{what}: seccompProfile is not RuntimeDefault")
    sc = c.get("securityContext", {})
    expect(sc.get("allowPrivilegeEscalation") is False, f"{what}: allowPrivilegeEscalation is not false")
    expect(sc.get("readOnlyRootFilesystem") is True, f"{what}: readOnlyRootFilesystem is not true")
    expect(sc.get("runAsNonRoot") is True, f"{what}: container runAsNonRoot is not true")
    expect(sc.get("capabilities", {}).get("drop") == ["ALL"], f"{what}: capabilities do not drop ALL")
    expect("privileged" not in sc or sc["privileged"] is False, f"{what}: privileged")


def scale_rules(cr):
    """{apiGroup: {resource: verbs}} of the ClusterRole's */scale rules."""
    out = {}
    for r in cr.get("rules", []):
        for g in r.get("apiGroups", []):
            for res in r.get("resources", []):
                if res.endswith("/scale"):
                    out.setdefault(g, {})[res[:-len("/scale")]] = sorted(r.get("verbs", []))
    return out


REVIEWS = {"tokenreviews", "subjectaccessreviews"}  # create-only, nothing stored


def check_common(docs, release_ns, fullname, watch_ns=None):
    """What holds for every value set."""
    for d in docs:
        kind, meta = d.get("kind"), d.get("metadata", {})
        labels = meta.get("labels", {}) or {}
        for label in STANDARD_LABELS:
            expect(label in labels, f"{kind}/{meta.get('name')}: no label {label}")
        if watch_ns and kind in ("Role", "RoleBinding") and meta.get("name") == fullname:
            expect(meta.get("namespace") == watch_ns,
                   f"{kind}/{fullname}: namespace {meta.get('namespace')!r}, want the watched {watch_ns!r}")
        elif kind not in ("ClusterRole", "ClusterRoleBinding", "ServiceMonitor", "PrometheusRule", "ConfigMap"):
            expect(meta.get("namespace") == release_ns,
                   f"{kind}/{meta.get('name')}: namespace {meta.get('namespace')!r}, want {release_ns!r}")
        # No wildcard anywhere in RBAC, and leases never cluster-wide.
        if kind in ("ClusterRole", "Role"):
            for r in d.get("rules", []):
                for field in ("apiGroups", "resources", "verbs"):
                    expect("*" not in r.get(field, []), f"{kind}/{meta.get('name')}: wildcard in {field}")
                if kind == "ClusterRole":
                    expect("leases" not in r.get("resources", []), "ClusterRole grants leases (they belong in the Role)")
                    expect("secrets" not in r.get("resources", []), "ClusterRole grants secrets")
                    for res in r.get("resources", []):
                        if res in ("deployments", "statefulsets", "replicasets", "rollouts"):
                            expect(not (set(r.get("verbs", [])) & WRITE_VERBS),
                                   f"ClusterRole may write {res} itself, not only its scale")
                    if "pods" in r.get("resources", []):
                        expect(not (set(r.get("verbs", [])) & WRITE_VERBS), "ClusterRole may change pods")
    dep, c = container(docs)
    expect(dep.get("metadata", {}).get("name") == fullname, f"Deployment named {dep.get('metadata', {}).get('name')!r}, want {fullname!r}")
    sel = dep.get("spec", {}).get("selector", {}).get("matchLabels", {})
    expect(sorted(sel) == ["app.kubernetes.io/instance", "app.kubernetes.io/name"],
           f"Deployment selector is {sel}, want only name and instance")
    pod = dep.get("spec", {}).get("template", {})
    pod_spec = pod.get("spec", {})
    check_security(pod_spec, c, "controller")
    ann = pod.get("metadata", {}).get("annotations", {}) or {}
    expect(re.fullmatch(r"[0-9a-f]{64}", str(ann.get("checksum/config", ""))) is not None,
           "pod template has no checksum/config annotation")
    args = c.get("args", [])
    expect(args[:1] == ["controller"], f"args do not start with 'controller': {args[:1]}")
    for a in ("--metrics-bind-address=:8080", "--health-probe-bind-address=:8081"):
        expect(a in args, f"args lack {a}")
    expect(any(a.startswith("--prometheus-url=http") for a in args), "args lack --prometheus-url")
    ports = {p["name"]: p["containerPort"] for p in c.get("ports", [])}
    expect(ports == {"metrics": 8080, "health": 8081}, f"container ports {ports}")
    expect(c.get("livenessProbe", {}).get("httpGet", {}) == {"path": "/healthz", "port": "health"},
           "liveness probe is not GET /healthz on port health")
    expect(c.get("readinessProbe", {}).get("httpGet", {}) == {"path": "/readyz", "port": "health"},
           "readiness probe is not GET /readyz on port health")
    res = c.get("resources", {})
    expect("cpu" not in res.get("limits", {}), "a CPU limit is set")
    expect(res.get("limits", {}).get("memory") and res.get("requests", {}).get("memory"),
           "no memory request and limit")
    # Never a secret in the pod spec: secrets come as files.
    for e in c.get("env", []) or []:
        expect(not re.search(r"(?i)token|password|secret", e.get("name", "")) or "valueFrom" in e,
               f"env {e.get('name')} holds a secret as a plain value")
    for a in args:
        expect(not re.match(r"--prometheus-(bearer-token|basic-auth-password)=", a), f"plain secret in args: {a}")
        expect(not re.search(r"(?i)authorization:", a), f"Authorization header in args: {a}")
        expect(not re.match(r"--prometheus-url=https?://[^/]*@", a), f"credentials in the URL: {a}")
    # The Service selects the controller, and the test pod is not selected by it.
    svc = one(docs, "Service")
    expect(svc.get("spec", {}).get("selector") == sel, "Service selector differs from the Deployment's")
    sports = {p["name"]: (p["port"], p["targetPort"]) for p in svc.get("spec", {}).get("ports", [])}
    expect(sports.get("metrics", (0,))[1] == "metrics" and sports.get("health", (0,))[1] == "health",
           f"Service ports {sports}")
    tests = [d for d in by_kind(docs, "Pod")
             if (d.get("metadata", {}).get("annotations") or {}).get("helm.sh/hook") == "test"]
    expect(len(tests) == 1, f"want one helm test pod, found {len(tests)}")
    for t in tests:
        tann = t["metadata"]["annotations"]
        expect(tann.get("helm.sh/hook-delete-policy") == "before-hook-creation,hook-succeeded",
               "test pod hook-delete-policy")
        tlabels = t["metadata"].get("labels", {})
        expect(not all(tlabels.get(k) == v for k, v in sel.items()), "the Service would select the test pod")
        tc = t["spec"]["containers"][0]
        expect(tc.get("image") == c.get("image"), "the test pod does not use the controller image")
        expect(tc.get("args", [])[:1] == ["probe"], f"test pod args {tc.get('args')}")
        check_security(t["spec"], tc, "test pod")
        expect(t["spec"].get("automountServiceAccountToken") is False, "the test pod mounts an API token")
    # Topology spread gets the selector labels.
    for tsc in pod_spec.get("topologySpreadConstraints", []) or []:
        expect(tsc.get("labelSelector", {}).get("matchLabels") == sel,
               f"topologySpreadConstraint labelSelector {tsc.get('labelSelector')}")
    return dep, c, args


def check_metrics_cert(docs, dep, c, fullname, release_ns):
    """The chart-made certificate of /metrics: a TLS Secret whose certificate its
    CA verifies for the Service's name, mounted, with the pods' checksum."""
    secrets = [d for d in by_kind(docs, "Secret") if d["metadata"]["name"] == f"{fullname}-metrics-tls"]
    expect(len(secrets) == 1, f"want Secret {fullname}-metrics-tls, found {len(secrets)}")
    if not secrets:
        return
    sec = secrets[0]
    expect(sec.get("type") == "kubernetes.io/tls" and sorted(sec.get("data", {})) == ["ca.crt", "tls.crt", "tls.key"],
           f"Secret {fullname}-metrics-tls: type {sec.get('type')}, keys {sorted(sec.get('data', {}))}")
    with tempfile.TemporaryDirectory() as tmp:
        for key in ("ca.crt", "tls.crt"):
            with open(os.path.join(tmp, key), "wb") as f:
                f.write(base64.b64decode(sec["data"][key]))
        name = f"{fullname}.{release_ns}.svc"
        r = subprocess.run(["openssl", "verify", "-CAfile", os.path.join(tmp, "ca.crt"),
                            "-verify_hostname", name, os.path.join(tmp, "tls.crt")],
                           capture_output=True, text=True)
        expect(r.returncode == 0, f"the certificate does not verify for {name} with the Secret's CA: {r.stdout}{r.stderr}")
    ann = dep["spec"]["template"]["metadata"].get("annotations", {})
    expect(re.fullmatch(r"[0-9a-f]{64}", str(ann.get("checksum/metrics-tls", ""))) is not None,
           "pod template has no checksum/metrics-tls annotation")
    expect({"name": "metrics-tls", "mountPath": "/etc/meshscaler/metrics-tls", "readOnly": True} in c.get("volumeMounts", []),
           "the certificate is not mounted read-only at /etc/meshscaler/metrics-tls")


def role_lease_rules(docs):
    roles = [r for r in by_kind(docs, "Role") if r["metadata"]["name"].endswith("-leader-election")]
    rules = [r for role in roles for r in role.get("rules", [])]
    return roles, rules


def render_case(case, path):
    docs = load(path)
    release_ns = {"default": "meshscaler-system"}.get(case, "meshscaler-system")
    fullname = "prod-meshscaler" if case == "release-name" else "meshscaler"
    watch_ns = "shop" if case in ("options", "watch-namespace", "watch-namespace-plain") else None
    dep, c, args = check_common(docs, release_ns, fullname, watch_ns)
    kinds = sorted({d["kind"] for d in docs})
    crs = [d for d in by_kind(docs, "ClusterRole") if d["metadata"]["name"] == fullname]
    cr = crs[0] if crs else {"rules": []}
    if watch_ns:
        # The rules live in the watched namespace's Role; the scale rules with them.
        role = [d for d in by_kind(docs, "Role") if d["metadata"]["name"] == fullname]
        expect(len(role) == 1, f"controller.watchNamespace: want one Role {fullname} in {watch_ns}, found {len(role)}")
        expect(all(set(r.get("resources", [])) <= REVIEWS for r in cr["rules"]),
               f"controller.watchNamespace: the ClusterRole grants more than the reviews: {cr['rules']}")
        cr = role[0] if role else {"rules": []}
    scale = scale_rules(cr)
    roles, lrules = role_lease_rules(docs)
    pdbs = by_kind(docs, "PodDisruptionBudget")

    if case in ("default", "release-name"):
        expect(kinds == ["ClusterRole", "ClusterRoleBinding", "Deployment", "Lease", "Pod",
                         "PodDisruptionBudget", "Role", "RoleBinding", "Secret", "Service", "ServiceAccount"],
               f"kinds {kinds}")
        # Secure by default (issue 23): namespaced user queries, /metrics over
        # HTTPS with the two reviews, a certificate a scraper can verify.
        for a in ("--user-queries=namespaced", "--metrics-secure=true",
                  "--metrics-cert-dir=/etc/meshscaler/metrics-tls"):
            expect(a in args, f"args lack {a}")
        check_metrics_cert(docs, dep, c, fullname, release_ns)
        lease = one(docs, "Lease")
        expect(lease["metadata"]["name"] == "meshscaler" and lease["metadata"]["namespace"] == release_ns
               and not lease.get("spec"), "the release's Lease is not meshscaler with an empty spec")
        expect(dep["spec"]["replicas"] == 2, "replicas is not 2")
        for a in ("--leader-elect=true", f"--leader-election-id=meshscaler",
                  f"--leader-election-namespace={release_ns}", "--sync-period=15s", "--concurrent-syncs=4",
                  "--log-format=json", "--log-level=info"):
            expect(a in args, f"args lack {a}")
        expect(not any(a.startswith("--dry-run") for a in args), "dry-run by default")
        expect(scale == {"apps": {r: ["get", "patch", "update"] for r in ("deployments", "statefulsets", "replicasets")},
                         "argoproj.io": {"rollouts": ["get", "patch", "update"]}}, f"scale rules {scale}")
        want = {("autoscaling.meshscaler.io", "meshautoscalers"): ["get", "list", "watch"],
                ("autoscaling.meshscaler.io", "meshautoscalers/status"): ["get", "patch", "update"],
                ("apps", "deployments"): ["get", "list", "watch"],
                ("apps", "statefulsets"): ["get", "list", "watch"],
                ("apps", "replicasets"): ["get", "list", "watch"],
                ("", "pods"): ["get", "list", "watch"],
                ("autoscaling", "horizontalpodautoscalers"): ["get", "list", "watch"],
                ("", "events"): ["create", "patch"],
                ("events.k8s.io", "events"): ["create", "patch"],
                ("authentication.k8s.io", "tokenreviews"): ["create"],
                ("authorization.k8s.io", "subjectaccessreviews"): ["create"]}
        got = {(g, res): sorted(r["verbs"]) for r in cr["rules"] for g in r["apiGroups"] for res in r["resources"]
               if not res.endswith("/scale")}
        expect(got == want, f"ClusterRole rules other than scale: {got}")
        expect(len(roles) == 1 and roles[0]["metadata"]["namespace"] == release_ns, "no Role in the release namespace")
        expect(any(r.get("verbs") == ["create"] and r.get("resources") == ["leases"] and "resourceNames" not in r
                   for r in lrules), "the Role does not grant create on leases")
        expect(any(r.get("resourceNames") == ["meshscaler"] and sorted(r.get("verbs", [])) == ["get", "patch", "update"]
                   for r in lrules), "the Role does not grant get/update/patch on the Lease meshscaler only")
        expect(all(r.get("resources") == ["leases"] and r.get("apiGroups") == ["coordination.k8s.io"] for r in lrules),
               "the Role grants more than leases")
        rb = one(docs, "RoleBinding")
        expect(rb.get("roleRef", {}).get("name") == roles[0]["metadata"]["name"] if roles else False,
               "the RoleBinding does not bind the Role")
        expect(len(pdbs) == 1 and pdbs[0]["spec"].get("minAvailable") == 1, "PDB minAvailable 1 missing")
        sa = one(docs, "ServiceAccount")
        crb = one(docs, "ClusterRoleBinding")
        expect(crb["subjects"] == [{"kind": "ServiceAccount", "name": sa["metadata"]["name"], "namespace": release_ns}],
               f"ClusterRoleBinding subjects {crb['subjects']}")
        expect(dep["spec"]["template"]["spec"]["serviceAccountName"] == sa["metadata"]["name"],
               "the Deployment does not run as the ServiceAccount")
        tsc = dep["spec"]["template"]["spec"].get("topologySpreadConstraints", [])
        expect(len(tsc) == 1 and tsc[0]["topologyKey"] == "kubernetes.io/hostname"
               and tsc[0]["whenUnsatisfiable"] == "ScheduleAnyway", f"topology spread {tsc}")
        test = by_kind(docs, "Pod")[0]
        url = test["spec"]["containers"][0]["args"][1]
        svc_env = fullname.upper().replace("-", "_")
        expect(url == f"http://$({svc_env}_SERVICE_HOST):$({svc_env}_SERVICE_PORT_HEALTH)/readyz",
               f"test URL {url}")
        expect(test["spec"].get("enableServiceLinks") is True, "the test pod has no service links")
        vols = dep["spec"]["template"]["spec"].get("volumes", [])
        expect([v["name"] for v in vols] == ["metrics-tls"], f"volumes other than the metrics certificate: {vols}")
    elif case == "all-on":
        for k in ("ServiceMonitor", "PrometheusRule", "NetworkPolicy", "ConfigMap"):
            expect(k in kinds, f"no {k}")
        sm = one(docs, "ServiceMonitor")
        ep = sm.get("spec", {}).get("endpoints", [{}])[0]
        expect(ep.get("port") == "metrics" and ep.get("honorLabels") is True, f"ServiceMonitor endpoint {ep}")
        expect(sm["metadata"]["labels"].get("release") == "kps", "ServiceMonitor lacks serviceMonitor.labels")
        tls = ep.get("tlsConfig", {})
        expect(ep.get("scheme") == "https" and not tls.get("insecureSkipVerify"),
               f"ServiceMonitor does not verify the certificate: scheme {ep.get('scheme')}, tlsConfig {tls}")
        expect(tls.get("ca") == {"secret": {"name": f"{fullname}-metrics-tls", "key": "ca.crt"}}
               and tls.get("serverName") == f"{fullname}.{release_ns}.svc",
               f"ServiceMonitor tlsConfig {tls}: want the CA of {fullname}-metrics-tls and serverName {fullname}.{release_ns}.svc")
        pr = one(docs, "PrometheusRule")
        rules = [r for g in pr["spec"]["groups"] for r in g["rules"]]
        names = [r.get("alert") for r in rules]
        expect(names == ["MeshscalerDown", "MeshscalerNoLeader", "MeshscalerSyncErrors",
                         "MeshscalerMetricsUnavailable", "MeshscalerScalingLimited",
                         "MeshscalerDownstreamLimited", "MeshscalerPrometheusFailures"], f"alerts {names}")
        for r in rules:
            expect(r.get("for") and r.get("labels", {}).get("severity") and r.get("annotations", {}).get("summary")
                   and r.get("annotations", {}).get("description"), f"{r.get('alert')}: needs for, severity, summary, description")
            expect(r.get("labels", {}).get("team") == "platform", f"{r.get('alert')}: additionalAlertLabels missing")
        expect(any(r["alert"] == "MeshscalerSyncErrors" and r["for"] == "20m" for r in rules), "alerts.syncErrors.for not applied")
        expect(any(r["alert"] == "MeshscalerPrometheusFailures" and r["expr"].rstrip().endswith("> 0.25") for r in rules),
               "alerts.prometheusFailures.ratio not applied")
        np = one(docs, "NetworkPolicy")
        eg = np["spec"]["egress"]
        ports = sorted((p["port"], p["protocol"]) for rule in eg for p in rule.get("ports", []))
        for want in ((53, "UDP"), (53, "TCP"), (443, "TCP"), (6443, "TCP"), (9090, "TCP")):
            expect(want in ports, f"NetworkPolicy egress lacks {want}")
        expect(np["spec"]["policyTypes"] == ["Ingress", "Egress"], "NetworkPolicy policyTypes")
        ing_ports = sorted(p["port"] for p in np["spec"]["ingress"][0]["ports"])
        expect(ing_ports == ["health", "metrics"], f"NetworkPolicy ingress ports {ing_ports}")
        peers = np["spec"]["ingress"][0].get("from", [])
        expect({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}} in peers,
               f"NetworkPolicy ingress peers {peers}")
        test_labels = by_kind(docs, "Pod")[0]["metadata"]["labels"]
        expect(any(all(test_labels.get(k) == v for k, v in p.get("podSelector", {}).get("matchLabels", {"x": "y"}).items())
                   for p in peers), "NetworkPolicy ingress does not admit the helm test pod")
        cm = one(docs, "ConfigMap")
        expect(cm["metadata"]["labels"].get("grafana_dashboard") == "1", "dashboard ConfigMap lacks grafana_dashboard=1")
        try:
            dash = json.loads(cm["data"]["meshscaler.json"])
            expect(dash.get("uid") == "meshscaler", "dashboard uid")
        except (KeyError, ValueError) as e:
            expect(False, f"dashboard ConfigMap does not hold JSON: {e}")
    elif case == "leader-off":
        expect(not roles and not by_kind(docs, "RoleBinding"), "a Lease Role without leader election")
        expect(not any(a.startswith("--leader-elect") for a in args), "--leader-elect without leader election")
        expect(not pdbs, "a PDB with one replica")
    elif case == "dry-run":
        expect("--dry-run=true" in args and "--output=json" in args, f"dry-run args {args}")
        expect(not any(a.startswith("--leader-elect") for a in args), "dry-run takes no lease, yet --leader-elect")
        expect(not roles, "a Lease Role in dry-run")
        for r in cr["rules"]:
            expect(not (set(r["verbs"]) & WRITE_VERBS) or set(r["resources"]) <= REVIEWS,
                   f"dry-run ClusterRole writes: {r}")
        expect(not pdbs, "a PDB with one replica")
    elif case == "bearer-token":
        path = "/etc/meshscaler/prometheus/bearer-token/tok"
        expect(f"--prometheus-bearer-token-file={path}" in args, f"args lack the token file: {args}")
        vols = dep["spec"]["template"]["spec"].get("volumes", [])
        expect({"name": "prometheus-bearer-token", "secret": {"secretName": "prom-token", "items": [{"key": "tok", "path": "tok"}]}} in vols,
               f"volumes {vols}")
        mounts = c.get("volumeMounts", [])
        expect({"name": "prometheus-bearer-token", "mountPath": "/etc/meshscaler/prometheus/bearer-token", "readOnly": True} in mounts,
               f"mounts {mounts}")
        expect("--prometheus-ca-file=/etc/meshscaler/prometheus/ca/ca.crt" in args, "args lack the CA file")
        expect(any(v.get("configMap", {}).get("name") == "prom-ca" for v in vols), "no CA ConfigMap volume")
        expect("--prometheus-header=X-Scope-OrgID: team-a" in args, "args lack the header")
        expect("--prometheus-timeout=5s" in args and "--prometheus-insecure-skip-verify=true" not in args, "timeout/insecure")
    elif case == "basic-auth":
        expect("--prometheus-basic-auth-username=alice" in args, "args lack the user name")
        expect("--prometheus-basic-auth-password-file=/etc/meshscaler/prometheus/basic-auth/password" in args,
               "args lack the password file")
        vols = dep["spec"]["template"]["spec"].get("volumes", [])
        expect(any(v.get("secret", {}).get("secretName") == "prom-basic" for v in vols), "no password Secret volume")
        expect(all(m.get("readOnly") is True for m in c.get("volumeMounts", [])), "a writable mount")
        expect("--prometheus-ca-file=/etc/meshscaler/prometheus/ca/root.pem" in args, "args lack the CA (Secret) file")
        expect(any(v.get("secret", {}).get("secretName") == "prom-ca" for v in vols), "no CA Secret volume")
        expect("--prometheus-insecure-skip-verify=true" not in args, "insecure")
    elif case == "scale-targets":
        expect(scale == {"apps": {"deployments": ["get", "patch", "update"]},
                         "example.com": {"widgets": ["get", "patch", "update"], "gadgets": ["get", "patch", "update"]}},
               f"scale rules {scale}")
    elif case == "options":
        for a in ("--namespace=shop", "--kube-api-qps=50", "--kube-api-burst=100", "--sync-period=1m30s",
                  "--concurrent-syncs=16", "--log-format=text", "--log-level=debug"):
            expect(a in args, f"args lack {a}")
        expect(args[-2:] == ["--prometheus-timeout=3s", "--output=table"], f"extraArgs not last: {args[-2:]}")
        expect(any(e.get("name") == "EXTRA" for e in c.get("env", [])), "extraEnv missing")
        expect(any(v.get("name") == "scratch" for v in dep["spec"]["template"]["spec"].get("volumes", [])), "extraVolumes missing")
        expect(any(m.get("name") == "scratch" for m in c.get("volumeMounts", [])), "extraVolumeMounts missing")
        expect(c["image"] == "registry.example/meshscaler:1.2.3@sha256:" + "a" * 64, f"image {c['image']}")
        expect(len(pdbs) == 1 and pdbs[0]["spec"].get("maxUnavailable") == 1 and "minAvailable" not in pdbs[0]["spec"],
               "PDB maxUnavailable")
        tsc = dep["spec"]["template"]["spec"].get("topologySpreadConstraints", [])
        expect(len(tsc) == 1 and tsc[0]["labelSelector"]["matchLabels"] == dep["spec"]["selector"]["matchLabels"],
               "labelSelector not filled in")
    elif case == "pdb-force":
        expect(len(pdbs) == 1, "podDisruptionBudget.force with one replica renders no PDB")
    elif case == "netpol-default":
        np = one(docs, "NetworkPolicy")
        peers = np["spec"]["ingress"][0].get("from", [])
        expect(peers, "an enabled NetworkPolicy with an empty from (it admits everyone)")
        expect({"namespaceSelector": {"matchLabels": {"kubernetes.io/metadata.name": "monitoring"}}} in peers,
               f"NetworkPolicy ingress peers {peers}: want the monitoring namespace")
    elif case == "watch-namespace":
        # (check_common and the set-up above: the Role in shop, the ClusterRole reviews only)
        expect("--namespace=shop" in args, "args lack --namespace=shop")
        rb = [d for d in by_kind(docs, "RoleBinding") if d["metadata"]["name"] == fullname]
        expect(len(rb) == 1 and rb[0]["roleRef"] == {"apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": fullname}
               and rb[0]["subjects"][0]["namespace"] == release_ns,
               f"RoleBinding in shop: {rb}")
        expect(any("meshautoscalers" in r.get("resources", []) for r in cr["rules"]), "the Role lacks meshautoscalers")
    elif case == "watch-namespace-plain":
        expect(not by_kind(docs, "ClusterRole") and not by_kind(docs, "ClusterRoleBinding"),
               "controller.watchNamespace without metrics.secure: a ClusterRole or binding remains")
        expect(not any(d["kind"] == "Secret" for d in docs), "a metrics certificate without metrics.secure")
        expect("--metrics-secure=true" not in args, "--metrics-secure with metrics.secure=false")
    elif case == "cert-manager":
        cert = one(docs, "Certificate")
        expect(cert["spec"]["secretName"] == f"{fullname}-metrics-tls"
               and f"{fullname}.{release_ns}.svc" in cert["spec"]["dnsNames"], f"Certificate {cert.get('spec')}")
        expect(cert["spec"]["issuerRef"]["kind"] == "Issuer" and one(docs, "Issuer")["spec"] == {"selfSigned": {}},
               "no self-signed Issuer for an empty issuerRef")
        expect(not by_kind(docs, "Secret"), "a chart-made Secret beside cert-manager's")
        vols = dep["spec"]["template"]["spec"].get("volumes", [])
        expect(any(v.get("secret", {}).get("secretName") == f"{fullname}-metrics-tls" for v in vols),
               "the pods do not mount cert-manager's Secret")
        sm = one(docs, "ServiceMonitor")
        tls = sm["spec"]["endpoints"][0].get("tlsConfig", {})
        expect(tls.get("ca", {}).get("secret", {}).get("name") == f"{fullname}-metrics-tls" and not tls.get("insecureSkipVerify"),
               f"ServiceMonitor tlsConfig {tls}")
    elif case == "cert-none":
        expect("--metrics-secure=true" in args and not any(a.startswith("--metrics-cert-dir") for a in args),
               f"source none: args {args}")
        expect(not by_kind(docs, "Secret") and not by_kind(docs, "Certificate"), "source none makes a certificate")
    else:
        expect(False, f"unknown case {case}")


SERIES_RE = re.compile(r"meshscaler_[a-z_]+")


def series_of(text):
    return {re.sub(r"_(bucket|sum|count)$", "", m) for m in SERIES_RE.findall(text)}


def check_series(chart, rules_file):
    with open(f"{chart}/dashboards/meshscaler.json") as f:
        dash = json.load(f)
    expect(dash.get("schemaVersion", 0) >= 36, "dashboard schemaVersion")
    variables = {v["name"]: v for v in dash.get("templating", {}).get("list", [])}
    expect(variables.get("datasource", {}).get("type") == "datasource"
           and variables["datasource"].get("query") == "prometheus", "no prometheus datasource variable")
    expect("label_values(meshscaler_desired_replicas, namespace)" in json.dumps(variables.get("namespace", {})),
           "namespace variable")
    expect("label_values(meshscaler_desired_replicas" in json.dumps(variables.get("name", {})), "name variable")
    exprs = []

    def walk(panels):
        for p in panels:
            if p.get("type") != "row":
                expect(p.get("datasource", {}).get("uid") == "${datasource}", f"panel {p.get('title')}: datasource")
                expect(p.get("targets"), f"panel {p.get('title')}: no queries")
            exprs.extend(t.get("expr", "") for t in p.get("targets", []))
            walk(p.get("panels", []))
    walk(dash.get("panels", []))
    dash_series = series_of("\n".join(exprs) + json.dumps(variables))
    rules = [r for d in load(rules_file) for g in d["spec"]["groups"] for r in g["rules"]]
    rule_series = series_of("\n".join(r["expr"] for r in rules))
    with open(f"{chart}/series.txt") as f:
        listed = {l.strip() for l in f if l.strip()}
    used = dash_series | rule_series
    expect(not (used - listed), f"series used but not in series.txt: {sorted(used - listed)}")
    expect(not (listed - used), f"series.txt lists series nothing uses: {sorted(listed - used)}")
    for s in listed:
        expect(re.fullmatch(r"meshscaler_[a-z_]+", s) is not None, f"series.txt: bad name {s!r}")


def check_values(chart):
    with open(f"{chart}/values.yaml") as f:
        lines = f.read().splitlines()
    with open(f"{chart}/README.md") as f:
        readme = f.read()
    stack, comment, documented, keys = [], False, set(), []
    for line in lines:
        if re.match(r"^\s*# -- ", line):
            comment = True
            continue
        if re.match(r"^\s*#", line):
            continue
        m = re.match(r"^(\s*)([A-Za-z0-9_]+):", line)
        if m:
            ind = len(m.group(1))
            while stack and stack[-1][0] >= ind:
                stack.pop()
            stack.append((ind, m.group(2)))
            path = ".".join(k for _, k in stack)
            keys.append(path)
            if comment:
                documented.add(path)
        comment = False
    for path in keys:
        parts = path.split(".")
        covered = any(".".join(parts[:i]) in documented for i in range(1, len(parts) + 1))
        is_parent = any(k.startswith(path + ".") for k in keys)
        expect(covered or is_parent, f"values.yaml: {path} has no '# --' comment")
    for path in documented:
        expect(f"`{path}`" in readme, f"README.md does not document {path}")


def main(argv):
    if len(argv) >= 3 and argv[0] == "render":
        render_case(argv[1], argv[2])
    elif len(argv) == 3 and argv[0] == "series":
        check_series(argv[1], argv[2])
    elif len(argv) == 2 and argv[0] == "values":
        check_values(argv[1])
    elif len(argv) >= 2 and argv[0] == "yaml":
        for p in argv[1:]:
            try:
                load(p)
            except yaml.YAMLError as e:
                expect(False, f"{p}: {e}")
    else:
        print(__doc__, file=sys.stderr)
        return 2
    for e in errors:
        print(e)
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
