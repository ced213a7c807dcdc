"""``fusecli codegen PATH``: each segment's generated CUDA kernel, or why it has none."""

from __future__ import annotations

from pathlib import Path

import click

from fusecli.cli.main import guarded
from fusecli.segment.rules import PROFILES


@click.command()
@click.argument("paths", nargs=-1, required=True, type=click.Path(path_type=Path))
@click.option("--check", is_flag=True,
              help="Compile every kernel with NVRTC (no GPU needed) and report, not print.")
@click.option("--rules", type=click.Choice(sorted(PROFILES)), default="nvfuser",
              show_default=True, help="Rule profile the segmenter uses.")
@click.option("--arch", default="sm_90", show_default=True, help="GPU architecture to compile for.")
@click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto",
              show_default=True, help="Where scripts' CUDA tensors go (sizes and strides are "
              "what generation reads).")
@guarded
def codegen(paths, check, rules, arch, device) -> int:
    """Print the CUDA C fusecli generates for each segment, with its launch parameters.

    \b
    Examples:
      fusecli codegen fusions/rms_norm.py
      fusecli codegen fusions/ --check          # what CI runs: every kernel compiles

    Exits 3 if a kernel fails to compile under --check.
    """
    from rich.markup import escape
    from rich.table import Table

    from fusecli.app.codegen_check import check_fusion
    from fusecli.load import discover, load_path
    from fusecli.report.terminal import terminal

    console = terminal()
    table = Table(title="kernels compiled with NVRTC" if check else None)
    for column in ("fusion", "segment", "scheduler", "status", "detail"):
        table.add_column(column, overflow="fold")
    failed, counts = 0, {}
    for path in discover(list(paths)):
        for loaded in load_path(path, device=device):
            results = check_fusion(loaded.fusion, loaded.inputs, rules, arch, compile=check)
            for result in results:
                failed += result.status == "failed"
                counts[result.status] = counts.get(result.status, 0) + 1
                if check:
                    detail = _detail(result)
                    style = {"failed": "red", "skipped": "yellow"}.get(result.status, "green")
                    table.add_row(escape(loaded.name), result.label, result.scheduler,
                                  f"[{style}]{result.status}[/]", detail)
                    continue
                title = f"{escape(loaded.name)}: segment {result.label}"
                console.rule(f"{title} ({result.scheduler})")
                if result.whole is not None:
                    console.print(f"no kernel for the segment as a whole ({result.whole}): "
                                  "it runs as parts, a kernel each")
                if result.kernel is None:
                    console.print(f"no kernel, runs on ATen: {result.message}")
                else:
                    click.echo(result.kernel.describe())
                    click.echo(result.kernel.source)  # plain: lines are never cropped
    if check:
        console.print(table)
        console.print(", ".join(f"{n} {status}" for status, n in sorted(counts.items())))
    return 3 if failed else 0


def _detail(result) -> str:
    if result.kernel is not None and result.status == "compiled":
        kernel = result.kernel
        return f"grid {kernel.grid} block {kernel.block} smem {kernel.shared_mem}"
    return result.message.splitlines()[0] if result.message else ""
