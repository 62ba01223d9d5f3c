"""worker_health: the health check of a model worker's container (docker-compose.yml). Exits 1
when a worker of this host (or --node) reported at start that it cannot use its device, or has
not reported yet; prints what it found (one JSON object with --json)."""

from __future__ import annotations

import json
import socket

from django.core.management.base import BaseCommand, CommandError

from scoring.selectors import worker_devices


class Command(BaseCommand):
    help = "Exit 1 unless this host's model workers found their device usable (scoring.worker)."

    def add_arguments(self, parser):
        parser.add_argument(
            "--node", help="one celery node name, e.g. gpu0@host (default: every node of this host)"
        )
        parser.add_argument("--json", action="store_true", dest="as_json", help="print one JSON object")

    def handle(self, *args, node, as_json, **_):
        host = socket.gethostname()
        found = [
            w for w in worker_devices() if (w["node"] == node if node else w["node"].endswith(f"@{host}"))
        ]
        unusable = [w for w in found if not w["usable"]]
        report = {"host": host, "node": node, "workers": found, "ok": bool(found) and not unusable}
        if as_json:
            self.stdout.write(json.dumps(report, sort_keys=True))
        else:
            for w in found:
                state = "usable" if w["usable"] else f"NOT usable ({w['reason']})"
                self.stdout.write(f"{w['node']}: {w['requested']} -> {w['gpu_name'] or w['device']}: {state}")
        if not found:
            raise CommandError(f"no device report from {node or 'a worker of ' + host} yet")
        if unusable:
            raise CommandError(
                "; ".join(f"{w['node']} cannot use its device: {w['reason']}" for w in unusable)
            )
