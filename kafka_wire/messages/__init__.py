"""The registry of API definitions: every module in this package defines one `API = Api(...)`."""

from __future__ import annotations

import importlib
import pkgutil

from ..schema import Api


def _discover() -> dict[int, Api]:
    apis: dict[int, Api] = {}
    for info in pkgutil.iter_modules(__path__):
        module = importlib.import_module(f"{__name__}.{info.name}")
        api = getattr(module, "API", None)
        if isinstance(api, Api):
            if api.key in apis:
                raise RuntimeError(f"API key {api.key} defined twice ({apis[api.key].name}, {api.name})")
            apis[api.key] = api
    return dict(sorted(apis.items()))


APIS: dict[int, Api] = _discover()
APIS_BY_NAME: dict[str, Api] = {api.name: api for api in APIS.values()}
