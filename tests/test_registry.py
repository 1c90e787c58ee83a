"""The one shape of every registry: things registered by name (also as a class decorator), for a
``with`` block, and from the entry points of installed plug-ins, read on the first lookup."""

from dataclasses import dataclass

import pytest

from rag_eval.registry import PluginError, Registry

from .plugins import install


@dataclass(frozen=True)
class Thing:
    name: str
    size: int = 1


def things(**kw) -> Registry[Thing]:
    return Registry("thing", lambda t: t.name, group="rag_eval_test.things", **kw)


def test_register_names_a_thing_by_itself_and_refuses_a_taken_name():
    reg = things()
    a = reg.register(Thing("a"))
    assert a == Thing("a")
    assert list(reg) == ["a"]
    assert reg["a"].size == 1
    with pytest.raises(ValueError, match="a thing named 'a' exists already"):
        reg.register(Thing("a", 2))
    assert reg["a"].size == 1
    assert reg.unknown("b") == "unknown thing 'b'; known: a"
    assert reg.unknown("aa") == "unknown thing 'aa'; did you mean 'a'? known: a"


def test_register_decorates_a_class():
    reg: Registry[type] = Registry("kind", lambda cls: cls.tag, group="rag_eval_test.kinds")

    @reg.register
    class Mine:
        tag = "mine"

    assert reg["mine"] is Mine


def test_registered_for_a_block_then_as_before_and_the_hooks_run():
    seen = []
    reg = things(changed=lambda: seen.append(sorted(reg.so_far())))
    reg.register(Thing("a"))
    with reg.registered(Thing("b"), Thing("c")):
        assert list(reg) == ["a", "b", "c"]
    assert list(reg) == ["a"]
    assert seen[-1] == ["a"]
    assert ["a", "b", "c"] in seen


def test_check_refuses_before_anything_is_added():
    def small(t: Thing) -> None:
        if t.size > 3:
            raise ValueError(f"{t.name} is too big")

    reg = things(check=small)
    with pytest.raises(ValueError, match="x is too big"):
        reg.register(Thing("x", 4))
    assert "x" not in reg


def test_an_installed_plugins_entry_points_register_on_first_lookup(tmp_path, monkeypatch):
    install(
        tmp_path,
        monkeypatch,
        """
        [rag_eval_test.things]
        big = plugin_things:BIG
        decorated = plugin_decorated
        """,
        {
            "plugin_things": """
                from tests.test_registry import Thing
                BIG = Thing("big", 10)
            """,
            "plugin_decorated": """
                from tests.test_registry import Thing, SHARED
                SHARED.register(Thing("decorated", 5))
            """,
        },
    )
    reg = things()
    reg.register(Thing("a"))
    globals()["SHARED"] = reg
    assert reg.so_far() == {"a": Thing("a")}  # nothing loaded yet
    assert reg["big"].size == 10
    assert list(reg) == ["a", "big", "decorated"]
    assert reg["decorated"].size == 5


def test_a_plugin_that_does_not_give_its_name_is_an_error_naming_the_entry_point(tmp_path, monkeypatch):
    install(
        tmp_path,
        monkeypatch,
        """
        [rag_eval_test.things]
        small = plugin_wrong:BIG
        """,
        {"plugin_wrong": "from tests.test_registry import Thing\nBIG = Thing('big', 10)\n"},
    )
    reg = things()
    with pytest.raises(PluginError) as err:
        _ = "small" in reg
    assert str(err.value) == (
        "entry point 'small = plugin_wrong:BIG' of rag-eval-plugin (group rag_eval_test.things) registers no "
        "thing named 'small'; name the entry point as the thing is named (registered now: big)"
    )


def test_a_plugin_that_fails_to_import_is_an_error_naming_the_entry_point(tmp_path, monkeypatch):
    install(
        tmp_path,
        monkeypatch,
        """
        [rag_eval_test.things]
        broken = plugin_broken:THING
        """,
        {"plugin_broken": "import no_such_module_here\n"},
    )
    with pytest.raises(
        PluginError,
        match=r"entry point 'broken = plugin_broken:THING' of rag-eval-plugin .*"
        r"does not load: ModuleNotFoundError: No module named 'no_such_module_here'",
    ):
        list(things())
