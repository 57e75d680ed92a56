"""``simstack serve model=NAME [host=127.0.0.1] [port=0] [backend=ray [ray_address=HOST:PORT]]``:
the what-if page of a model.

Binds 127.0.0.1 unless told otherwise; bound to another interface, the printed address holds
a random token that every request must carry. A model that does not load is served as a page
with its one-line error (and the line is printed), so the person at the browser sees why.
``backend=ray ray_address=HOST:PORT`` runs the page's simulations' replications as tasks of
that running Ray cluster, as ``backend=ray`` does for a study.
"""

from __future__ import annotations

import importlib.util
import ipaddress
import secrets
import sys
from typing import Any

from simstack.errors import ConfigError, SimstackError

KEYS = ("model", "host", "port", "models_dir", "backend", "ray_address")
LOOPBACK = ("localhost",)


def parse(args: list[str]) -> dict[str, str]:
    """``key=value`` words; ``model`` required."""
    out: dict[str, str] = {}
    for arg in args:
        key, eq, value = arg.partition("=")
        if not eq or key not in KEYS:
            raise ConfigError(f"simstack serve: expected {'=..., '.join(KEYS)}=..., got {arg!r} "
                              "(simstack serve model=NAME [host=127.0.0.1] [port=0])")
        out[key] = value
    if not out.get("model"):
        raise ConfigError("simstack serve: which model? simstack serve model=NAME|PATH")
    port = out.get("port", "0")
    if not port.isdigit() or int(port) > 65535:
        raise ConfigError(f"simstack serve: port= expects a number 0-65535 (0: any free port), got {port!r}")
    if out.get("backend", "processes") not in ("processes", "ray"):
        raise ConfigError(f"simstack serve: backend= expects processes or ray, got {out['backend']!r}")
    if "ray_address" in out and out.get("backend") != "ray":
        raise ConfigError("simstack serve: ray_address= goes with backend=ray")
    if out.get("backend") == "ray" and not out.get("ray_address"):
        # A Ray started for each run (the page's runs are stopped at any click) would leave its
        # agents behind when stopped: the page uses a cluster that outlives its runs.
        raise ConfigError("simstack serve: backend=ray needs ray_address=HOST:PORT of a running Ray cluster "
                          "(ray start --head); the page does not start a Ray of its own")
    return out


def backend_of(chosen: dict[str, str]) -> Any:
    """The runner's backend: None (the runner's own worker) or a ``RayCluster`` (its address
    checked now, so a wrong one is one line before the server starts)."""
    if chosen.get("backend") != "ray":
        return None
    from simstack.engine.raypool import RayCluster

    return RayCluster(address=chosen["ray_address"])


def is_loopback(host: str) -> bool:
    if host in LOOPBACK:
        return True
    try:
        return ipaddress.ip_address(host).is_loopback
    except ValueError:
        return False


def main(args: list[str]) -> int:
    """Serve until interrupted; exit 2 on a bad argument."""
    try:
        chosen = parse(args)
        backend = backend_of(chosen)
    except SimstackError as exc:
        print(f"simstack: error: {exc}", file=sys.stderr)
        return 2
    if importlib.util.find_spec("dash") is None:
        print("simstack: error: simstack serve needs Dash, which is not installed here: pip install 'simstack[serve]'",
              file=sys.stderr)
        return 2
    import logging

    from werkzeug.serving import make_server

    from simstack.load.loader import load_model
    from simstack.serve.app import build

    if chosen.get("models_dir"):
        import os
        os.environ["SIMSTACK_MODELS"] = chosen["models_dir"]
    logging.getLogger("werkzeug").setLevel(logging.WARNING)  # no line per request
    host = chosen.get("host", "127.0.0.1")
    token = None if is_loopback(host) else secrets.token_urlsafe(16)
    try:
        spec, error = load_model(chosen["model"]), ""
    except SimstackError as exc:
        spec, error = None, str(exc)
        print(f"simstack: error: {exc} (the page shows it)", file=sys.stderr)
    app, runner = build(spec, error, token, backend)
    try:
        server = make_server(host, int(chosen.get("port", "0")), app.server, threaded=True)
    except OSError as exc:
        print(f"simstack: error: cannot listen on {host}:{chosen.get('port', '0')}: {exc.strerror}", file=sys.stderr)
        return 2
    shown = f"[{host}]" if ":" in host else host
    print(f"simstack serve: http://{shown}:{server.server_port}/" + (f"?token={token}" if token else ""), flush=True)
    try:
        server.serve_forever()
    finally:
        runner.close()
        server.server_close()
    return 0
