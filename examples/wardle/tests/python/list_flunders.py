"""Lists the flunders of a namespace with the official Python client's dynamic client.

Usage: list_flunders.py KUBECONFIG NAMESPACE

Prints one JSON document: the server's git version as the client read it (from `/version/`),
whether discovery found the Flunder kind, and the names of the flunders listed.
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
    flunders = client.resources.get(api_version="wardle.example.com/v1alpha1", kind="Flunder")
    listed = flunders.get(namespace=namespace)
    print(
        json.dumps(
            {
                "version": client.version["kubernetes"]["gitVersion"],
                "kind": flunders.kind,
                "namespaced": flunders.namespaced,
                "names": sorted(item.metadata.name for item in listed.items),
            }
        )
    )


if __name__ == "__main__":
    main()
