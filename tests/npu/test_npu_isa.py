"""The machine as data: the table drives dispatch, costs and docs; the preset is DESIGN.md §5."""
from __future__ import annotations

from tritonpu.isa import (COST_RULES, GRAMMAR_PATH, INSTRUCTIONS, MACHINES, PIPES, REFERENCE_PATH,
                          reference_markdown)
from tritonpu.npu import cycles
from tritonpu.npu.registry import IMPLS, decode  # noqa: F401  (decode imports the families)


def test_every_instruction_has_implementation_cost_and_doc():
    from tritonpu.npu import ops_scalar, ops_transfer, ops_vector  # noqa: F401
    problems = []
    for name, ins in INSTRUCTIONS.items():
        fam = IMPLS.get(ins.impl)
        if fam is None or ins.op not in fam.ops:
            problems.append(f"{name}: no implementation {ins.impl}/{ins.op}")
        if ins.cost not in COST_RULES or ins.cost not in cycles.COSTS:
            problems.append(f"{name}: no cost rule {ins.cost!r}")
        if not ins.doc.strip():
            problems.append(f"{name}: no doc line")
        if ins.pipe not in PIPES and ins.pipe not in ("src", "dst", "arg"):
            problems.append(f"{name}: unknown pipe {ins.pipe}")
    assert not problems, "\n".join(problems)
    assert set(COST_RULES) == set(cycles.COSTS)


def test_reference_is_generated_from_the_table_and_not_stale():
    text = reference_markdown()
    assert REFERENCE_PATH.read_text() == text, \
        "isa/REFERENCE.md is stale: run `tritonpu asm --reference > isa/REFERENCE.md`"
    for ins in INSTRUCTIONS.values():
        assert f"`{ins.syntax()}`" in text


def test_ascend910b_preset_is_design_section_5():
    m = MACHINES["ascend910b"]
    KiB = 1024
    assert m.cores == 24 and m.clock_ghz == 1.8
    assert m.capacity == {"ub": 192 * KiB, "l1": 512 * KiB, "l0a": 64 * KiB, "l0b": 64 * KiB,
                          "l0c": 128 * KiB}
    assert m.align == {"ub": 32, "l1": 32, "l0a": 512, "l0b": 512, "l0c": 64}
    p = m.paths
    assert (p["gm->ub"].pipe, p["gm->ub"].latency) == ("MTE2", 200)
    assert (p["gm->l1"].pipe, p["gm->l1"].latency) == ("MTE2", 200)
    assert m.l2_line_bytes == 512 and m.ddr_bytes_per_cycle == 32 and m.l2_bytes_per_cycle == 110
    assert m.l2_bytes == 192 * 1024 * KiB
    assert (p["ub->gm"].pipe, p["ub->gm"].latency, p["ub->gm"].bytes_per_cycle) == ("MTE3", 100, 64)
    assert (p["l1->l0a"].pipe, p["l1->l0a"].latency, p["l1->l0a"].bytes_per_cycle) == ("MTE1", 20, 512)
    assert (p["l1->l0b"].pipe, p["l1->l0b"].latency, p["l1->l0b"].bytes_per_cycle) == ("MTE1", 20, 256)
    assert (p["l0c->gm"].pipe, p["l0c->gm"].latency, p["l0c->gm"].bytes_per_cycle) == ("FIX", 100, 256)
    assert (p["l0c->ub"].pipe, p["l0c->ub"].latency, p["l0c->ub"].bytes_per_cycle) == ("FIX", 0, 256)
    assert m.cube_k0 == {"f16": 16, "bf16": 16, "f32": 8, "i8": 32}
    assert m.macs_per_cycle("f16") == 16 * 16 * 16 and m.macs_per_cycle("f32") == 16 * 8 * 16
    assert m.macs_per_cycle("i8") == 16 * 32 * 16
    assert m.vector_repeat_bytes == 256 and m.vector_slow_cycles == 2
    slow = {n for n, i in INSTRUCTIONS.items() if i.cost == "vector_slow"}
    assert {"vexp", "vlog", "vsqrt", "vrsqrt", "vdiv", "vrecip"} <= slow
    assert m.scalar_cycles == 1 and m.sync_cycles == 1 and m.event_ids == 8 and m.beat_bytes == 32


def test_grammar_is_a_lark_file_in_isa():
    assert GRAMMAR_PATH.name == "asm.lark" and GRAMMAR_PATH.parent.name == "isa"
    assert "instr:" in GRAMMAR_PATH.read_text()
