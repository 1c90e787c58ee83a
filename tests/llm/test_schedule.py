"""The prefix-aware scheduler: the waiting request that best continues the last prompt goes next,
first come among equals; never more than the limit at once; cancellation never loses a place."""

import asyncio
import json

from rag_eval.llm.schedule import PrefixScheduler, prompt_text


def test_longest_shared_prefix_goes_next_and_ties_first_come():
    async def main():
        s = PrefixScheduler(1)
        order, running, peak = [], 0, 0

        async def job(text):
            nonlocal running, peak
            async with await s(text):
                running += 1
                peak = max(peak, running)
                order.append(text)
                await asyncio.sleep(0.01)
                running -= 1

        first = asyncio.ensure_future(job("A: x1"))
        await asyncio.sleep(0)
        rest = [asyncio.ensure_future(job(t)) for t in ("B: y1", "A: x2", "B: y2", "A: x3", "C: z")]
        await asyncio.gather(first, *rest)
        return order, peak

    order, peak = asyncio.run(main())
    assert peak == 1
    # After "A: x1": the other A prompts (x2 before x3, first come), then B's, then C.
    assert order == ["A: x1", "A: x2", "A: x3", "B: y1", "B: y2", "C: z"]


def test_cancelled_waiters_do_not_keep_the_place():
    async def main():
        s = PrefixScheduler(1)
        async with await s("a"):
            waiter = asyncio.ensure_future(s.acquire("b"))
            await asyncio.sleep(0)
            waiter.cancel()
            await asyncio.sleep(0)
        # The place is free again: a new request gets it at once.
        await asyncio.wait_for(s.acquire("c"), 0.5)
        s.release()
        return s.free

    assert asyncio.run(main()) == 1


def test_prompt_text_reads_roles_and_contents():
    body = json.dumps(
        {"messages": [{"role": "system", "content": "S"}, {"role": "user", "content": [{"type": "text", "text": "U"}]}]}
    )
    assert prompt_text(body.encode()) == "system\0S\0user\0U\0"
    assert prompt_text(b"not json") == ""
