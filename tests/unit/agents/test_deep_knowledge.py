"""`kbtool deep`: with a provider its understanding becomes the function comment and its
names for the variables become local names (knowledge service, gate, provenance agent);
offline, the understanding states the facts and claims no purpose (issue 31.5, 31.6)."""

from __future__ import annotations

import json
import re

import pytest

from kbtool.kb import queries
from kbtool.kb.db import open_rw
from kbtool.services.deep import run_deep
from kbtool.services.knowledge import function_knowledge
from testkit.llm_server import FakeLLMServer

UNDERSTANDING = (
    "Walks the list at its first parameter and calls the two helpers on each "
    "element, then returns the count of elements it visited."
)


@pytest.fixture()
def demo_db(tmp_path):
    from kbtool.services.demo import build_demo

    db = tmp_path / "kb.db"
    build_demo(db, echo=lambda _s: None)
    return db


@pytest.mark.parametrize("selector", ["provider_a", "provider_b"])
def test_provider_understanding_is_the_comment_and_its_locals_are_local_names(demo_db, selector):
    answer = json.dumps(
        {
            "understanding": UNDERSTANDING,
            "explanation": "the loop",
            "name": "walk_elements",
            "summary": "Walks the elements.",
            "confidence": 0.8,
            "reasons": ["loop"],
            "locals": {"obj0": "list_head", "l1": "visited", "zz9": "nothing"},
        }
    )
    with FakeLLMServer([("text", answer)]) as srv:
        env = (
            {
                "PROVIDER_A_API_KEY": "k",
                "PROVIDER_A_BASE_URL": srv.url,
                "PROVIDER_A_MODEL": "fake-claude",
            }
            if selector == "provider_a"
            else {
                "PROVIDER_B_API_KEY": "k",
                "PROVIDER_B_BASE_URL": srv.url + "/v1",
                "PROVIDER_B_MODEL": "fake-gpt",
            }
        )
        conn = open_rw(demo_db, create=False)
        out = run_deep(conn, 2, functions=[68], backend=selector, env=env, name=False)
        assert len(srv.requests) == 1
    assert out["understood_by_provider"] == 1
    sid = out["functions"][0]["stable_id"]
    k = function_knowledge(conn, sid)
    conn.close()
    assert k["comment"]["text"] == UNDERSTANDING and k["comment"]["provenance"] == "agent"
    locs = {x["name"]: x for x in k["locals"]}
    assert (
        "list_head" in locs and locs["list_head"]["provenance"] == "agent"
    )  # obj0 (the cleaned C's name) is p0
    assert "nothing" not in locs  # a variable the C does not have


def test_offline_understanding_states_facts_not_purpose(demo_db):
    conn = open_rw(demo_db, create=False)
    run_deep(conn, 2, functions=[55, 68], name=False)
    sids = {f["index"]: f["stable_id"] for f in queries.list_functions(conn, 2)}
    got = {i: queries.get_analysis(conn, sids[i]) for i in (55, 68)}
    conn.close()
    u55, u68 = got[55]["understanding"], got[68]["understanding"]
    # f55 of zstd 1.5.5 (its main body): calls, host, globals, strings as they are
    assert u55.startswith("f55 takes 2 parameters and returns i32")
    assert "ZSTD_compress" in u55 and "'hello hello hello hello world'" in u55
    assert re.search(r"reads globals \d+ times? and writes them \d+ times", u55)
    # f68: recursion, indirect calls, memory, a loop
    assert "It calls itself, f39, f40." in u68
    assert "It makes 4 indirect calls through the function table." in u68
    assert re.search(r"It reads memory at \d+ places and writes it at \d+\.", u68)
    assert "It has 1 loop" in u68
    for u in (u55, u68):
        assert not re.search(r"\b(probably|likely|seems|used to|responsible|purpose)\b", u)
