"""Lift one wasm function to C (the studio's ``lifted_c``).

Two linear passes, no recursion on nesting depth:

1. :func:`_scan` decodes the body once (``kbtool.wasm.instr.decode_one``), matches block
   ends and records every branch site, then decides per block how C will express it,
   innermost first: a ``block`` nobody branches to is inlined; one whose only branches are
   top-level ``br_if`` becomes ``if (!cond) { rest }``; one whose branches can all use C
   ``break`` becomes ``do { ... } while (0)``; otherwise its end gets a label and the
   branches a ``goto``. A ``loop`` is ``while (1)`` (``continue`` for back edges), or
   ``do { ... } while (cond)`` when its only back edge is a final ``br_if``. A branch that
   leaves the innermost loop to where the loop's own end leads is ``break``
   (:meth:`_Lifter.break_lands`); at the loop's end ``while (1)`` is rewritten when its
   shape allows: a leading exit test gives ``while (!c)``, a body that is one ``if``
   looping back gives ``while (c)``, a final ``if (c) continue;`` gives ``do ... while
   (c)``, and a ``while`` whose last statement steps a counter of its condition (no other
   ``continue``) gives ``for (i = a; c; i++)``. The block right around a ``br_table``
   chain closes the ``switch``, so the last case's code sits under its label.
2. :class:`_Lifter` walks the instructions with an expression stack. Values stay
   expressions until an effect could change what they read (a store, a call, a write of a
   local they read, a control-flow split), then they are spilled to temporaries ``tN``.
   A ``local.tee`` stays the expression ``(lN = v)`` (flag ``F_SET``, ``~N`` in ``locs``)
   when :meth:`_Lifter.foldable` sees its consumer before any other use of ``lN``; a read
   of ``lN`` or control flow while it is pending turns it back into a statement.

Every emitted identifier is sanitised (see :mod:`kbtool.lift.context`); comments are
escaped. A function over the size/time budget, or using an instruction without a C
rendering, gets a valid stub with a ``/* kbtool: ... */`` placeholder comment. GC ops are
prelude helper calls (field types from :mod:`kbtool.lift.gctypes`); ``br_on_*`` are
conditional breaks through :meth:`_Lifter.br_if`.

The package's parts, one concern each (every part imports the others relatively, so the
compiled twin ``kbtool.lift._clifter`` built from a copy of this package calls its own
compiled parts; see ``kbtool/lift/_build.py``):

- :mod:`.base`: limits, flags, C type tables, errors/results, the expression ``_E`` and the
  text of constants and operands;
- :mod:`.decode`: the body decoder (the hot loop) and per-op stack effects;
- :mod:`.structure`: pass 1, block matching and each block's C form;
- :mod:`.switchmerge`: tests on a switch's value after its default joined to it;
- :mod:`.localvars`: C names of locals and their C types (``uint32_t``/``bool``);
- :mod:`.core`: the walker's state, output, value stack and spills;
- :mod:`.memory`: loads/stores, addresses and the shadow-stack frame struct;
- :mod:`.values`: operators, calls and prelude helper calls;
- :mod:`.branches`: branches, ``br_if``, ``br_table`` and ``switch``;
- :mod:`.control`: opening and closing blocks, loops rewritten as ``while``/``do``/``for``;
- :mod:`.gc`: GC proposal ops and ``br_on_*``;
- :mod:`.walk`: the walk over the instructions (dispatch);
- :mod:`.driver`: header, signature, declarations and :func:`lift_function`;
- :mod:`.notes`: line comments (knowledge at an instruction offset) above their statement;
- :mod:`.opnames`: the opcodes tested by name, from the one opcode table.
"""

from .base import LiftError, LiftResult, LiftStats, c_ident_path
from .driver import lift_function
from .localvars import _local_names, param_c_names

__all__ = [
    "LiftError",
    "LiftResult",
    "LiftStats",
    "_local_names",
    "c_ident_path",
    "lift_function",
    "param_c_names",
]
