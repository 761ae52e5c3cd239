"""plugin.yaml `license:`: an SPDX license expression, kept in its canonical form (one rule, read by both
the loader and lint)."""

from __future__ import annotations

from pathlib import Path

from oz0.edge.plugins.declared import PluginError

__all__ = ["LICENSE_FIX", "spdx_license"]

LICENSE_FIX = "use SPDX identifiers (for example Apache-2.0, MIT OR Apache-2.0; listed at https://spdx.org/licenses/)"


def spdx_license(expression: str, file: Path) -> str:
    """`expression` canonical (`apache-2.0 or mit` is `Apache-2.0 OR MIT`), or a PluginError naming it."""
    # packaging's SPDX table is imported only for a plugin that declares a licence (it costs a few ms)
    from packaging.licenses import InvalidLicenseExpression, canonicalize_license_expression

    try:
        return str(canonicalize_license_expression(expression))
    except InvalidLicenseExpression:
        raise PluginError(f"license {expression!r} is not an SPDX license expression", file=str(file),
                          location="$.license") from None
