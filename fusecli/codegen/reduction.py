def build_reduction(ctx, name):
    from fusecli.codegen.kernel import UnsupportedError
    raise UnsupportedError("todo")
