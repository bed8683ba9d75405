#!/usr/bin/python3
"""Validates a manifest written by dptrain (a ConfigMap, then a Kubeflow MPIJob) against the MPI
Operator's own CRD schema (../shared/k8s/kubeflow.org_mpijobs.yaml, version v2beta1), made strict:
every object schema without additionalProperties or x-kubernetes-preserve-unknown-fields rejects
unknown fields (the API server would drop them silently). The ConfigMap is checked against a minimal
ConfigMap schema. Then what the schema leaves loose: the launcher runs mpirun ... dptrain run FILE, FILE
lies in a folder where every pod mounts the ConfigMap holding it, workers run sshd, slots suffice.

Usage: mpijob_check.py CRD MANIFEST [--image I] [--ranks N] [--job-text FILE]
       mpijob_check.py CRD MANIFEST --self-test   (each broken copy of the manifest must fail)
Debian's python3-jsonschema and python3-yaml, for /usr/bin/python3. Exit 0 when valid, 1 otherwise.
"""
import copy
import functools
import os
import re
import sys

import jsonschema
import yaml

NAME_RE = r"^[a-z]([-a-z0-9]*[a-z0-9])?$"  # RFC 1035 label: pod and service names derive from it
OBJECT_META = {
    "type": "object", "required": ["name"], "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "pattern": NAME_RE, "maxLength": 63},
        "namespace": {"type": "string", "pattern": NAME_RE, "maxLength": 63},
        "labels": {"type": "object", "additionalProperties": {"type": "string"}},
        "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    },
}
CONFIG_MAP = {
    "type": "object", "required": ["apiVersion", "kind", "metadata", "data"], "additionalProperties": False,
    "properties": {
        "apiVersion": {"const": "v1"}, "kind": {"const": "ConfigMap"}, "metadata": OBJECT_META,
        "data": {"type": "object", "propertyNames": {"pattern": r"^[-._a-zA-Z0-9]+$"},
                 "additionalProperties": {"type": "string"}},
        "immutable": {"type": "boolean"},
    },
}


def json_schema(node, strict):
    """The OpenAPI v3 schema `node` as JSON Schema; `strict` closes objects to unknown fields."""
    if isinstance(node, list):
        return [json_schema(n, strict) for n in node]
    if not isinstance(node, dict):
        return node
    out = {}
    for key, value in node.items():
        if key in ("properties", "patternProperties"):
            out[key] = {k: json_schema(v, strict) for k, v in value.items()}
        elif key.startswith("x-kubernetes-") or key in ("nullable", "format", "description", "default", "example"):
            continue
        else:
            out[key] = json_schema(value, strict)
    if node.get("x-kubernetes-int-or-string"):
        out.pop("type", None)
        out.setdefault("anyOf", [{"type": "integer"}, {"type": "string"}])
    if node.get("nullable") and isinstance(out.get("type"), str):
        out["type"] = [out["type"], "null"]
    is_object = node.get("type") == "object" or "properties" in node
    if (strict and is_object and "additionalProperties" not in node
            and not node.get("x-kubernetes-preserve-unknown-fields")):
        out["additionalProperties"] = False
    return out


@functools.lru_cache(maxsize=None)
def mpijob_schema(crd_path, strict):
    crd = yaml.safe_load(open(crd_path))
    versions = [v for v in crd["spec"]["versions"] if v["name"] == "v2beta1"]
    if not versions:
        sys.exit(f"{crd_path}: no v2beta1 version in the CRD")
    schema = json_schema(versions[0]["schema"]["openAPIV3Schema"], strict)
    # What the API server itself requires of every object, and what the operator accepts as replica types.
    schema["required"] = sorted(set(schema.get("required", [])) | {"apiVersion", "kind", "metadata", "spec"})
    schema["properties"]["apiVersion"] = {"const": "kubeflow.org/v2beta1"}
    schema["properties"]["kind"] = {"const": "MPIJob"}
    schema["properties"]["metadata"] = OBJECT_META
    schema["properties"]["spec"]["properties"]["mpiReplicaSpecs"]["propertyNames"] = {"enum": ["Launcher", "Worker"]}
    return schema


def schema_errors(schema, doc, what):
    validator = jsonschema.Draft7Validator(schema)
    return [f"{what}: {'/'.join(map(str, e.absolute_path)) or '(top)'}: {e.message}"
            for e in sorted(validator.iter_errors(doc), key=lambda e: list(map(str, e.absolute_path)))]


def structure_errors(config_map, job, expect):
    """What the schema leaves loose; `expect` holds the optional image, ranks and job text."""
    errors = []
    specs = job["spec"]["mpiReplicaSpecs"]
    for kind in ("Launcher", "Worker"):
        if kind not in specs:
            return [f"spec.mpiReplicaSpecs: no {kind}"]
    launcher, worker = specs["Launcher"], specs["Worker"]
    if launcher.get("replicas", 1) != 1:
        errors.append("Launcher: replicas must be 1")
    workers = worker.get("replicas", 1)
    name = job["metadata"]["name"]
    if len(f"{name}-worker-{workers - 1}") > 63:
        errors.append(f"metadata.name: '{name}-worker-{workers - 1}' (a pod's host name) exceeds 63 characters")
    containers = {k: specs[k]["template"]["spec"]["containers"] for k in ("Launcher", "Worker")}
    for kind, cs in containers.items():
        if len(cs) != 1:
            errors.append(f"{kind}: expected one container, got {len(cs)}")
    command = containers["Launcher"][0].get("command", []) + containers["Launcher"][0].get("args", [])
    if not command or os.path.basename(command[0]) != "mpirun":
        return errors + [f"Launcher: the command does not start with mpirun: {command}"]
    np = int(command[command.index("-np") + 1]) if "-np" in command else None
    if np is None:
        errors.append("Launcher: mpirun without -np")
    elif np > workers * job["spec"].get("slotsPerWorker", 1):
        errors.append(f"-np {np} exceeds {workers} workers x slotsPerWorker")
    if expect.get("ranks") and np != expect["ranks"]:
        errors.append(f"-np {np}, expected {expect['ranks']}")
    runs = [i for i in range(len(command) - 2)
            if os.path.basename(command[i]) == "dptrain" and command[i + 1] == "run"]
    if not runs:
        return errors + [f"Launcher: mpirun does not run 'dptrain run FILE': {command}"]
    job_path = command[runs[0] + 2]
    folder, file_name = os.path.dirname(job_path), os.path.basename(job_path)
    cm_name = config_map["metadata"]["name"]
    worker_command = containers["Worker"][0].get("command", [])
    if not worker_command or os.path.basename(worker_command[0]) != "sshd":
        errors.append(f"Worker: does not run sshd (mpirun reaches the workers over ssh): {worker_command}")
    for kind in ("Launcher", "Worker"):
        pod = specs[kind]["template"]["spec"]
        container = containers[kind][0]
        if expect.get("image") and container.get("image") != expect["image"]:
            errors.append(f"{kind}: image {container.get('image')}, expected {expect['image']}")
        volumes = {v["name"]: v for v in pod.get("volumes", [])}
        mounted = False
        for mount in container.get("volumeMounts", []):
            volume = volumes.get(mount["name"], {}).get("configMap")
            if mount["mountPath"].rstrip("/") != folder or not volume or volume.get("name") != cm_name:
                continue
            items = volume.get("items")
            key = file_name if items is None else next((i["key"] for i in items if i["path"] == file_name), None)
            mounted = key is not None and key in config_map.get("data", {})
        if not mounted:
            errors.append(f"{kind}: {job_path} is not ConfigMap {cm_name}'s data mounted at {folder}")
        resources = container.get("resources", {})
        requests, limits = resources.get("requests", {}), resources.get("limits", {})
        if "nvidia.com/gpu" in requests and requests.get("nvidia.com/gpu") != limits.get("nvidia.com/gpu"):
            errors.append(f"{kind}: nvidia.com/gpu requests and limits differ (Kubernetes requires them equal)")
    if expect.get("job_text") is not None:
        data = config_map.get("data", {})
        if data.get(file_name) != expect["job_text"]:
            errors.append(f"ConfigMap {cm_name}: data[{file_name}] is not the job text given")
    return errors


def check(crd_path, docs, expect):
    if len(docs) != 2 or not all(isinstance(d, dict) for d in docs):
        return [f"expected two documents (ConfigMap, MPIJob), got {len(docs)}"]
    config_map, job = docs
    errors = schema_errors(CONFIG_MAP, config_map, "ConfigMap")
    errors += schema_errors(mpijob_schema(crd_path, True), job, "MPIJob")
    return errors or structure_errors(config_map, job, expect)


def at(doc, path):
    """The parent of a field ('spec.runPolicy.cleanPodPolicy'; a list for keys with dots) and its key."""
    parts = path if isinstance(path, list) else [int(p) if p.isdigit() else p for p in path.split(".")]
    node = doc
    for p in parts[:-1]:
        node = node[p]
    return node, parts[-1]


def target(docs, path):
    """A path starting 'cm.' (or ['cm', ...]) is in the ConfigMap, any other in the MPIJob."""
    if isinstance(path, list):
        return at(docs[0], path[1:]) if path[0] == "cm" else at(docs[1], path)
    return at(docs[0], path.removeprefix("cm.")) if path.startswith("cm.") else at(docs[1], path)


def remove(path):
    def f(docs):
        node, key = target(docs, path)
        del node[key]
    return f


def rename(path, new):
    def f(docs):
        node, key = target(docs, path)
        node[new] = node.pop(key)
    return f


def set_value(path, value):
    def f(docs):
        node, key = target(docs, path)
        node[key] = value
    return f


L = "spec.mpiReplicaSpecs.Launcher.template.spec"
W = "spec.mpiReplicaSpecs.Worker.template.spec"
BROKEN = [  # (what, change, caught only by the strict schema)
    ("required spec.mpiReplicaSpecs removed", remove("spec.mpiReplicaSpecs"), False),
    ("required container name removed", remove(f"{L}.containers.0.name"), False),
    ("required volume name removed", remove(f"{W}.volumes.0.name"), False),
    ("metadata.name removed", remove("metadata.name"), False),
    ("slotsPerWorker as a string", set_value("spec.slotsPerWorker", "4"), False),
    ("misspelt slotsPerWorkers", rename("spec.slotsPerWorker", "slotsPerWorkers"), True),
    ("misspelt container comand", rename(f"{L}.containers.0.command", "comand"), True),
    ("misspelt resources.limit", rename(f"{W}.containers.0.resources.limits", "limit"), True),
    ("misspelt mountpath (required)", rename(f"{W}.containers.0.volumeMounts.0.mountPath", "mountpath"), False),
    ("misspelt readonly", rename(f"{W}.containers.0.volumeMounts.0.readOnly", "readonly"), True),
    ("misspelt configMap", rename(f"{W}.volumes.0.configMap", "configmap"), True),
    ("misspelt runPolicy.cleanPodPolicies", rename("spec.runPolicy.cleanPodPolicy", "cleanPodPolicies"), True),
    ("misspelt replica type Workers", rename("spec.mpiReplicaSpecs.Worker", "Workers"), False),
    ("misspelt ConfigMap data", rename("cm.data", "date"), False),
    ("worker mounts the job elsewhere", set_value(f"{W}.containers.0.volumeMounts.0.mountPath", "/etc/other"), False),
    ("launcher does not run dptrain",
     set_value(f"{L}.containers.0.command", ["mpirun", "-np", "2", "hostname"]), False),
    ("ConfigMap key renamed", rename(["cm", "data", "job.toml"], "job.tom"), False),
    ("workers run no sshd", set_value(f"{W}.containers.0.command", ["sleep", "infinity"]), False),
]


def self_test(crd_path, docs):
    failures = 0
    if check(crd_path, docs, {}):
        print("not ok - the manifest itself does not validate")
        return 1
    for what, change, strict_only in BROKEN:
        broken = copy.deepcopy(docs)
        try:
            change(broken)
        except (KeyError, IndexError) as e:
            print(f"not ok - {what}: the manifest has no such field ({e})")
            failures += 1
            continue
        errors = check(crd_path, broken, {})
        if not errors:
            print(f"not ok - {what}: accepted")
            failures += 1
            continue
        print(f"ok - {what}: rejected ({errors[0][:150]})")
        if strict_only:  # the CRD as the API server applies it drops the field without a word
            if schema_errors(mpijob_schema(crd_path, False), broken[1], "MPIJob"):
                print(f"not ok - {what}: also rejected without strictness; the case proves nothing")
                failures += 1
    return 1 if failures else 0


def main(argv):
    if len(argv) < 3:
        sys.exit(__doc__)
    crd_path, manifest = argv[1], argv[2]
    docs = list(yaml.safe_load_all(open(manifest)))
    if "--self-test" in argv:
        return self_test(crd_path, docs)
    expect = {}
    if "--image" in argv:
        expect["image"] = argv[argv.index("--image") + 1]
    if "--ranks" in argv:
        expect["ranks"] = int(argv[argv.index("--ranks") + 1])
    if "--job-text" in argv:
        expect["job_text"] = open(argv[argv.index("--job-text") + 1]).read()
    errors = check(crd_path, docs, expect)
    for e in errors:
        print(f"{manifest}: {e}")
    return 1 if errors else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
