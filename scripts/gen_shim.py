#!/usr/bin/env python3
"""Generates the BLAS/CBLAS shim of libblas_ft from shim/blas_symbols.txt.

Outputs (committed, so that a build needs no Python):
  shim/generated/forward_fortran.c    forwarders of the Fortran BLAS routines (name_ and name)
  shim/generated/forward_cblas.c      forwarders of the CBLAS routines
  shim/blas_ft.map                    linker version script: exactly the list is exported
  tests/shim/generated/fake_host.c    a fake host BLAS that records every call (test only)
  tests/shim/generated/forward_cases.c one forwarding test per exported forwarder
  tests/shim/generated/export_list.h  the exported names and patterns, for the export test

Usage: gen_shim.py [--root DIR]   regenerate the outputs under DIR (default: the repository)
       gen_shim.py --check        exit 1, with a diff, if the committed outputs are stale
"""

import argparse
import difflib
import os
import re
import sys
import tempfile

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
LIST = os.path.join('shim', 'blas_symbols.txt')
OUTPUTS = [
    os.path.join('shim', 'generated', 'forward_fortran.c'),
    os.path.join('shim', 'generated', 'forward_cblas.c'),
    os.path.join('shim', 'blas_ft.map'),
    os.path.join('tests', 'shim', 'generated', 'fake_host.c'),
    os.path.join('tests', 'shim', 'generated', 'forward_cases.c'),
    os.path.join('tests', 'shim', 'generated', 'export_list.h'),
]
KINDS = {'f77', 'f77-gemm', 'f77-own', 'f77-result', 'cblas', 'cblas-gemm', 'cblas-own',
         'cblas-f77', 'gemm-alias', 'data', 'pattern'}
ENUMS = {'CBLAS_LAYOUT', 'CBLAS_TRANSPOSE', 'CBLAS_UPLO', 'CBLAS_DIAG', 'CBLAS_SIDE'}
BY_VALUE = {'int', 'size_t', 'float', 'double'} | ENUMS
RETURNS = {'void', 'int', 'size_t', 'float', 'double', 'float _Complex', 'double _Complex'}
# Arguments of one call that the fake host can record (largest: ?gemm_ with its two lengths).
MAX_ARGS = 24
WIDTH = 100


class Param:
    def __init__(self, ctype, name):
        self.ctype = ctype  # e.g. "const int *", "float", "CBLAS_UPLO"
        self.name = name

    @property
    def is_pointer(self):
        return self.ctype.endswith('*')

    @property
    def base(self):
        """The pointed-to (or by-value) type without qualifiers."""
        return self.ctype.replace('const ', '').rstrip('*').strip()

    def decl(self):
        sep = '' if self.is_pointer else ' '
        return f'{self.ctype}{sep}{self.name}'


class Routine:
    def __init__(self, kind, ret, name, params, host, lineno):
        self.kind, self.ret, self.name, self.params = kind, ret, name, params
        self.host_base, self.lineno = host, lineno

    @property
    def fortran(self):
        return self.kind.startswith('f77')

    @property
    def symbol(self):
        """The primary exported symbol (Fortran: with the trailing underscore)."""
        return self.name + '_' if self.fortran else self.name

    @property
    def c_params(self):
        """Parameters as C sees them, gfortran's hidden string lengths included."""
        if not self.fortran:
            return list(self.params)
        hidden = [Param('size_t', p.name + '_len') for p in self.params
                  if p.is_pointer and p.base == 'char']
        return list(self.params) + hidden

    @property
    def host_symbol(self):
        """The host routine the forwarder calls."""
        if self.kind == 'f77-result' or self.kind == 'cblas-f77':
            return self.host_base + '_'
        return self.symbol

    def host_params(self):
        if self.kind == 'f77-result':
            return self.c_params[:-1]
        return self.c_params


def fail(msg):
    sys.exit(f'gen_shim.py: {LIST}: {msg}')


def parse_params(text, lineno):
    text = text.strip()
    if not text:
        return []
    params = []
    for item in text.split(','):
        item = item.strip()
        if item == '...':
            params.append(Param('...', ''))
            continue
        m = re.fullmatch(r'(.*?[\s*])(\w+)', item)
        if not m:
            fail(f'line {lineno}: cannot parse parameter "{item}"')
        # "const int *", "float _Complex *", "CBLAS_UPLO": one space before the '*'.
        ctype = re.sub(r'\s*\*', ' *', ' '.join(m.group(1).split())).strip()
        p = Param(ctype, m.group(2))
        if not p.is_pointer and p.ctype not in BY_VALUE:
            fail(f'line {lineno}: unsupported by-value type "{p.ctype}"')
        params.append(p)
    return params


def read_list(path):
    routines = []
    seen = set()
    with open(path, encoding='utf-8') as f:
        for lineno, line in enumerate(f, 1):
            line = line.strip()
            if not line or line.startswith('#'):
                continue
            fields = [x.strip() for x in line.split('|')]
            if len(fields) < 3:
                fail(f'line {lineno}: expected "kind | return | name | parameters"')
            kind, ret, name = fields[:3]
            params_text = fields[3] if len(fields) > 3 else ''
            host = fields[4] if len(fields) > 4 else None
            if kind not in KINDS:
                fail(f'line {lineno}: unknown kind "{kind}"')
            if kind not in ('data', 'pattern') and ret not in RETURNS:
                fail(f'line {lineno}: unsupported return type "{ret}"')
            if (kind in ('f77-result', 'cblas-f77')) != (host is not None):
                fail(f'line {lineno}: a host routine is given exactly for f77-result, cblas-f77')
            if name in seen:
                fail(f'line {lineno}: "{name}" listed twice')
            seen.add(name)
            routines.append(Routine(kind, ret, name, parse_params(params_text, lineno), host,
                                    lineno))
    by_name = {r.name: r for r in routines}
    for r in routines:
        if r.host_base is not None:
            target = by_name.get(r.host_base)
            if target is None or target.kind != 'f77':
                fail(f'line {r.lineno}: host routine "{r.host_base}" is no f77 routine of the list')
            r.host_ret = target.ret
            if r.kind == 'f77-result' and r.params[-1].base != target.ret:
                fail(f'line {r.lineno}: the last parameter must point to a {target.ret}')
        else:
            r.host_ret = r.ret
    return routines


def wrap_call(head, args, tail, indent):
    """head(arg, arg, ...)tail, broken after commas to stay within WIDTH columns."""
    lines, cur = [], head + '('
    cont = ' ' * len(head + '(') if len(head) < 40 else indent + '    '
    for i, a in enumerate(args):
        last = i + 1 == len(args)
        piece = a + (')' + tail if last else ', ')
        if len(cur) + len(piece.rstrip()) > WIDTH and cur != head + '(':
            lines.append(cur.rstrip())
            cur = cont
        cur += piece
    if not args:
        cur += ')' + tail
    lines.append(cur)
    return '\n'.join(lines)


def prototype(ret, name, params, indent='', tail=''):
    args = [p.decl() for p in params] or ['void']
    return wrap_call(f'{indent}{ret} {name}', args, tail, indent)


def banner(what):
    return (f'/* {what}\n * Generated by scripts/gen_shim.py from shim/blas_symbols.txt: edit those, '
            'not this file. */\n')


# ---------------------------------------------------------------- the library's forwarders

def forwarder(r):
    """One exported routine that resolves its host routine once, records and forwards."""
    params = r.c_params
    out = [f'/* {r.symbol} -> host {r.host_symbol} */']
    out.append(prototype(f'BLASFT_SHIM_EXPORT {r.ret}', r.symbol, params))
    out.append('{')
    out.append(prototype(f'typedef {r.host_ret}', 'host_fn', r.host_params(), '    ', tail=';'))
    out.append(f'    static blasft_call_stat stat = {{.name = "{r.symbol}"}};')
    out.append('    static void *host;')
    out.append(f'    host_fn *fn = (host_fn *)blasft_shim_host(&host, "{r.host_symbol}");')
    out.append('    blasft_shim_call call = blasft_shim_enter(&stat);')
    args = [p.name for p in r.host_params()]
    if r.kind == 'f77-result':
        out.append(wrap_call(f'    *{params[-1].name} = fn', args, ';', '    '))
    elif r.ret == 'void':
        out.append(wrap_call('    fn', args, ';', '    '))
    else:
        out.append(wrap_call(f'    {r.ret} result = fn', args, ';', '    '))
    out.append('    blasft_shim_leave(&call);')
    if r.ret != 'void':
        out.append('    return result;')
    out.append('}')
    if r.fortran:
        out.append(f'BLASFT_SHIM_ALIAS({r.name}, {r.symbol})')
    return '\n'.join(out) + '\n'


def gen_forwarders(routines, fortran):
    kinds = ('f77', 'f77-result') if fortran else ('cblas', 'cblas-f77')
    what = ('Forwarders of the Fortran BLAS routines, each exported as name_ and name (gfortran '
            'calling\n * convention: arguments by reference, hidden string lengths last).'
            if fortran else 'Forwarders of the CBLAS routines to the host BLAS\'s CBLAS.')
    out = [banner(what), '#include "shim/forward.h"\n']
    out += [forwarder(r) for r in routines if r.kind in kinds]
    return '\n'.join(out)


def gen_map(routines):
    out = ['/* Linker version script of libblas_ft: exports exactly shim/blas_symbols.txt.',
           ' * Generated by scripts/gen_shim.py: edit the list, not this file. */', '{',
           '  global:']
    for r in routines:
        if r.kind == 'pattern':
            out.append(f'    {r.name};')
        elif r.fortran:
            out.append(f'    {r.symbol}; {r.name};')
        else:
            out.append(f'    {r.name};')
    out += ['  local: *;', '};']
    return '\n'.join(out) + '\n'


# ---------------------------------------------------------------- test side

def pointee_size(r, p):
    """Bytes the fake copies from a pointer argument: the pointed-to scalar (a complex one for
    void *: 8 bytes for single, 16 for double precision)."""
    base = p.base
    if base == 'void':
        stem = r.name[6:] if r.name.startswith('cblas_') else r.name
        return 16 if stem.startswith(('z', 'dz')) or stem == 'dcabs1' else 8
    return f'sizeof({base})'


def record_arg(r, i, p):
    if p.is_pointer:
        return f'    fake_record_pointer({i}, {p.name}, {pointee_size(r, p)});'
    if p.ctype in ('float', 'double'):
        return f'    fake_record_value({i}, fake_encode_{p.ctype}({p.name}));'
    if p.ctype == 'size_t':
        return f'    fake_record_value({i}, (uint64_t){p.name});'
    return f'    fake_record_value({i}, fake_encode_int((int){p.name}));'


RET_EXPR = {
    'int': 'fake_return_int("{0}")',
    'size_t': '(size_t)fake_return_int("{0}")',
    'float': '(float)fake_return_real("{0}")',
    'double': 'fake_return_real("{0}")',
    'float _Complex': '(float _Complex)fake_return_complex("{0}")',
    'double _Complex': 'fake_return_complex("{0}")',
}


def fake_routines(routines):
    """Every host routine any exported entry point calls, once."""
    fakes, seen = [], set()
    for r in routines:
        if r.kind in ('f77', 'f77-gemm', 'cblas', 'cblas-gemm') and r.symbol not in seen:
            seen.add(r.symbol)
            fakes.append(r)
    return fakes


def gen_fake(routines):
    out = [banner('A fake host BLAS for the forwarding test: every routine records its name and '
                  'arguments in\n * fake_last_call and returns a value derived from its name.'),
           '#include "fake_host.h"\n']
    for r in fake_routines(routines):
        params = r.c_params
        if len(params) > MAX_ARGS:
            sys.exit(f'gen_shim.py: {r.symbol} has more than {MAX_ARGS} arguments')
        out.append(prototype(f'FAKE_EXPORT {r.ret}', r.symbol, params))
        out.append('{')
        out.append(f'    fake_record_begin("{r.symbol}", {len(params)});')
        out += [record_arg(r, i, p) for i, p in enumerate(params)]
        if r.ret != 'void':
            out.append('    return ' + RET_EXPR[r.ret].format(r.symbol) + ';')
        out.append('}\n')
    return '\n'.join(out)


def arg_expr(p, i):
    if p.is_pointer:
        return f'({p.ctype})case_buffer({i})'
    if p.ctype in ('float', 'double'):
        return f'case_{p.ctype}({i})'
    if p.ctype == 'size_t':
        return f'case_size({i})'
    if p.ctype == 'int':
        return f'case_int({i})'
    return f'({p.ctype})case_int({i})'


def expect_arg(r, p, i):
    if p.is_pointer:
        return f'    expect_arg_pointer({i}, case_buffer({i}), {pointee_size(r, p)});'
    if p.ctype in ('float', 'double'):
        return f'    expect_arg_value({i}, fake_encode_{p.ctype}(case_{p.ctype}({i})));'
    if p.ctype == 'size_t':
        return f'    expect_arg_value({i}, (uint64_t)case_size({i}));'
    return f'    expect_arg_value({i}, fake_encode_int(case_int({i})));'


def test_case(r, symbol, index):
    params = r.c_params
    host_params = r.host_params()
    fname = f'forward_{symbol}'
    out = [f'static void {fname}(void **state)', '{', '    (void)state;']
    out.append(prototype(f'typedef {r.ret}', 'fn_t', params, '    ', tail=';'))
    out.append(f'    fn_t *fn = (fn_t *)shim_symbol("{symbol}");')
    out.append(f'    case_begin({index});')
    args = [arg_expr(p, i) for i, p in enumerate(params)]
    if r.kind == 'f77-result':
        out.append(f'    {r.params[-1].base} result;')
        args[-1] = '&result'
        out.append(wrap_call('    fn', args, ';', '    '))
    elif r.ret == 'void':
        out.append(wrap_call('    fn', args, ';', '    '))
    else:
        out.append(wrap_call(f'    {r.ret} result = fn', args, ';', '    '))
    out.append(f'    expect_host_call("{r.host_symbol}", {len(host_params)});')
    out += [expect_arg(r, p, i) for i, p in enumerate(host_params)]
    ret = r.host_ret if r.kind == 'f77-result' else r.ret
    if ret != 'void':
        check = {'int': 'expect_int_result', 'size_t': 'expect_int_result',
                 'float': 'expect_float_result', 'double': 'expect_double_result',
                 'float _Complex': 'expect_complex_float_result',
                 'double _Complex': 'expect_complex_double_result'}[ret]
        out.append(f'    {check}(result, "{r.host_symbol}");')
    out.append('}\n')
    return fname, '\n'.join(out)


def gen_cases(routines):
    out = [banner('One forwarding test per generated forwarder, included by '
                  'tests/shim/test_forward.c.')]
    names = []
    index = 0
    for r in routines:
        if r.kind not in ('f77', 'f77-result', 'cblas', 'cblas-f77'):
            continue
        for symbol in ([r.symbol, r.name] if r.fortran else [r.symbol]):
            index += 1
            fname, text = test_case(r, symbol, index)
            names.append(fname)
            out.append(text)
    out.append('#define GENERATED_FORWARD_TESTS \\')
    out += [f'    cmocka_unit_test({n}),' + (' \\' if i + 1 < len(names) else '')
            for i, n in enumerate(names)]
    return '\n'.join(out) + '\n'


def gen_export_list(routines):
    out = [banner('What libblas_ft exports, for tests/shim/test_exports.c.'),
           '/* Every exported symbol of the list (Fortran routines under both names). */',
           'static const char *const exported_symbols[] = {']
    for r in routines:
        if r.kind == 'pattern':
            continue
        if r.fortran:
            out.append(f'    "{r.symbol}", "{r.name}",')
        else:
            out.append(f'    "{r.name}",')
    out.append('};\n')
    out.append('/* Globs of symbols other parts of libblas_ft export. */')
    out.append('static const char *const exported_patterns[] = {')
    out += [f'    "{r.name}",' for r in routines if r.kind == 'pattern']
    out.append('};')
    return '\n'.join(out) + '\n'


def generate(root):
    routines = read_list(os.path.join(REPO, LIST))
    texts = {
        OUTPUTS[0]: gen_forwarders(routines, True),
        OUTPUTS[1]: gen_forwarders(routines, False),
        OUTPUTS[2]: gen_map(routines),
        OUTPUTS[3]: gen_fake(routines),
        OUTPUTS[4]: gen_cases(routines),
        OUTPUTS[5]: gen_export_list(routines),
    }
    for rel, text in texts.items():
        path = os.path.join(root, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w', encoding='utf-8') as f:
            f.write(text)


def check():
    """Regenerates into a temporary directory and compares with the committed files."""
    stale = False
    with tempfile.TemporaryDirectory() as tmp:
        generate(tmp)
        for rel in OUTPUTS:
            with open(os.path.join(tmp, rel), encoding='utf-8') as f:
                fresh = f.readlines()
            try:
                with open(os.path.join(REPO, rel), encoding='utf-8') as f:
                    committed = f.readlines()
            except FileNotFoundError:
                committed = []
            if fresh != committed:
                stale = True
                sys.stdout.writelines(difflib.unified_diff(committed, fresh, 'committed/' + rel,
                                                           'generated/' + rel))
    if stale:
        print('gen_shim.py: generated files are stale; run python3 scripts/gen_shim.py')
        return 1
    print('gen_shim.py: generated files are up to date')
    return 0


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument('--root', default=REPO, help='write the outputs under this directory')
    ap.add_argument('--check', action='store_true', help='only compare with the committed files')
    args = ap.parse_args()
    if args.check:
        return check()
    generate(args.root)
    return 0


if __name__ == '__main__':
    sys.exit(main())
