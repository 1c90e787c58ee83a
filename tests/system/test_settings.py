"""A system kind is one config class and one client, registered by name: one defined here (a
system that answers from the corpus by itself) is asked by ``rag-eval validate --try`` when an
installed plug-in names it in the entry points ``rag_eval.systems``, and config validation knows
its type and keys; after the test it is gone."""

from typing import ClassVar, Literal

from rag_eval.cli import main
from rag_eval.retrievers.mapping import Passage
from rag_eval.system.http import SystemReply, Trial
from rag_eval.system.settings import SYSTEM_KINDS, SystemKind

from ..plugins import install, plugins_read_again


class EchoSystem:
    """Answers every question with its own words and returns one chunk by id."""

    def __init__(self, cfg: "EchoSystemConfig", cache=None, where: str = "system"):
        self.cfg = cfg

    async def ask(self, question) -> SystemReply:
        return SystemReply(question.id, f"{self.cfg.prefix} {question.question}", [Passage(self.cfg.chunk, None, 1.0)])

    async def try_once(self, question) -> Trial:
        reply = await self.ask(question)
        return Trial({"question": question.question}, None, reply.answer or "", reply)

    async def aclose(self) -> None:
        pass


class EchoSystemConfig(SystemKind):
    client: ClassVar[type] = EchoSystem
    type: Literal["echo"]
    prefix: str = "You asked:"
    chunk: str = "py/sets"


def test_an_installed_plugins_system_kind_is_asked_and_validated(small_project, monkeypatch, capsys):
    install(
        small_project / "site",
        monkeypatch,
        """
        [rag_eval.systems]
        echo = rag_eval_echo_system:EchoSystemConfig
        """,
        {"rag_eval_echo_system": "from tests.system.test_settings import EchoSystemConfig\n"},
    )
    config = small_project / "audit.yaml"
    config.write_text(config.read_text() + "system: {type: echo, prefix: 'Echo:'}\n")
    with plugins_read_again(SYSTEM_KINDS):
        assert main(["validate", str(config), "--try", "What is a set?"]) == 0, capsys.readouterr()
        out = capsys.readouterr().out
        assert 'request: the echo system given {"question": "What is a set?"}' in out
        assert "  answer: 'Echo: What is a set?'" in out
        assert "  1. id 'py/sets', score 1: a corpus chunk (by id)" in out
        config.write_text(config.read_text().replace("prefix:", "prefx:"))
        assert main(["validate", str(config)]) == 2
        err = capsys.readouterr().err
        assert "(system.prefx): unknown key 'prefx'" in err and "did you mean 'prefix'?" in err
        config.write_text(config.read_text().replace("type: echo, prefx", "type: ech, prefix"))
        assert main(["validate", str(config)]) == 2
        err = capsys.readouterr().err
        assert "unknown system type 'ech'" in err and "did you mean 'echo'?" in err
    assert "echo" not in SYSTEM_KINDS
    config.write_text(config.read_text().replace("type: ech,", "type: echo,"))
    assert main(["validate", str(config)]) == 2
    assert "unknown system type 'echo'" in capsys.readouterr().err
