"""The ARM stand-in's Functions host: one app instance on 127.0.0.1.

It indexes ``function_app.py`` as the Python worker does (the real azure-functions library's
``FunctionApp.get_functions()``: names, HTTP triggers, routes, methods), then serves each request
by building an ``azure.functions.HttpRequest`` and calling the user function, as the worker does
for the host. The real host (.NET, gRPC to the worker) is not here; this is its stand-in.

    python funchost.py WWWROOT PORT
"""

from __future__ import annotations

import importlib.util
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from urllib.parse import parse_qs, urlsplit


def _load(root: Path) -> dict:
    sys.path.insert(0, str(root))
    spec = importlib.util.spec_from_file_location("function_app", root / "function_app.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules["function_app"] = module
    spec.loader.exec_module(module)
    app = module.app
    routes = {}
    for fn in app.get_functions():
        trigger = fn.get_trigger()
        if trigger is None or trigger.get_binding_name() != "httpTrigger":
            continue
        methods = {str(getattr(m, "value", m)).upper() for m in (trigger.methods or ["GET", "POST"])}
        routes[(trigger.route or fn.get_function_name()).strip("/")] = (methods, fn.get_user_function())
    return routes


def main(argv: list[str]) -> int:
    import azure.functions as func

    root, port = Path(argv[0]), int(argv[1])
    routes = _load(root)

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, fmt: str, *args: object) -> None:
            return

        def _serve(self) -> None:
            url = urlsplit(self.path)
            route = url.path.removeprefix("/api/").strip("/")
            body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            methods, user = routes.get(route, (set(), None))
            if user is None or self.command not in methods:
                self.send_response(404)
                self.send_header("Content-Length", "0")
                self.end_headers()
                return
            req = func.HttpRequest(
                method=self.command,
                url=f"https://localhost{self.path}",
                headers=dict(self.headers.items()),
                params={k: v[0] for k, v in parse_qs(url.query).items()},
                route_params={},
                body=body,
            )
            resp = user(req)
            data = resp.get_body() or b""
            self.send_response(resp.status_code)
            self.send_header("Content-Type", resp.mimetype or "text/plain")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        do_GET = do_POST = _serve

    ThreadingHTTPServer(("127.0.0.1", port), Handler).serve_forever()
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
