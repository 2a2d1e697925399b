"""Drives wardle through a real kube-apiserver with the official Python client's dynamic client.

Usage: real_cluster.py KUBECONFIG NAMESPACE

Discovers Flunder through kube-apiserver, creates, lists and watches one, applies another with
server-side apply, deletes both, and prints one JSON document of what it saw.
"""

import json
import sys

from kubernetes import config, dynamic
from kubernetes.client import api_client


def main() -> None:
    kubeconfig, namespace = sys.argv[1], sys.argv[2]
    client = dynamic.DynamicClient(
        api_client.ApiClient(configuration=config.load_kube_config(config_file=kubeconfig))
    )
    group = client.request("GET", "/apis/wardle.example.com")
    flunders = client.resources.get(api_version="wardle.example.com/v1alpha1", kind="Flunder")
    created = flunders.create(
        namespace=namespace,
        body={
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "py-one"},
            "spec": {"reference": "x"},
        },
    )
    listed = flunders.get(namespace=namespace)
    watched = []
    for event in flunders.watch(namespace=namespace, timeout=10):
        watched.append(f"{event['type']} {event['object'].metadata.name}")
        break
    applied = client.server_side_apply(
        flunders,
        body={
            "apiVersion": "wardle.example.com/v1alpha1",
            "kind": "Flunder",
            "metadata": {"name": "applied-by-python", "namespace": namespace},
            "spec": {"reference": "y"},
        },
        name="applied-by-python",
        namespace=namespace,
        field_manager="python-apply",
    )
    for name in ("py-one", "applied-by-python"):
        flunders.delete(name=name, namespace=namespace)
    print(
        json.dumps(
            {
                "kind": flunders.kind,
                "namespaced": flunders.namespaced,
                "preferred": group.preferredVersion.version,
                "created": created.metadata.name,
                "listed": sorted(item.metadata.name for item in listed.items),
                "applied": applied.metadata.name,
                "manager": applied.metadata.managedFields[0].manager,
                "watched": watched,
            }
        )
    )


if __name__ == "__main__":
    main()
