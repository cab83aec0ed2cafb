"""An agent that prints without end: the drivers' output buffer keeps a bounded start and end of
it, positions that count everything printed, waiters that find what they wait for, and the
run's API key even where the output was left out. (How fast it absorbs 40 MB is printed by
``benchmarks/output_absorb.py``, not asserted here.)"""
import asyncio

from harness.drivers.output import OutputBuffer

KEY = "sk-canary-feedface0123"


def filled(pieces: int, size: int = 1000, **limits) -> OutputBuffer:
    buffer = OutputBuffer(**limits)
    for n in range(pieces):
        buffer.feed(f"{n:09d}|".encode() + b"x" * (size - 10))
    return buffer


def test_a_long_output_keeps_its_start_and_end_and_says_what_it_left_out():
    buffer = filled(4000, head_chars=3000, tail_chars=50_000)      # 4 MB printed
    assert buffer.end == 4_000_000
    text = buffer.text
    assert len(text) < 3000 + 2 * 50_000 + 200
    assert text.startswith("000000000|") and text.endswith("x" * 990)
    assert "000003999|" in text and "000001000|" not in text
    left_out = int(text.split("[… ")[1].split(" characters not kept")[0])
    assert left_out + 3000 + len(text.split("…]\n")[1]) == buffer.end


def test_positions_count_every_character_printed():
    buffer = filled(300, head_chars=100, tail_chars=20_000)
    found = buffer.search(r"000000299\|")
    assert found is not None and found[1] == 299_000 + 10
    assert buffer.since(299_000).startswith("000000299|")
    kept = buffer.since(0)                      # from where the kept end starts: the rest is left out
    assert 20_000 <= len(kept) <= 40_000 and kept == buffer.since(buffer.end - len(kept))
    assert buffer.tail(5) == "xxxxx"


async def test_a_waiter_finds_a_line_split_across_reads_after_a_long_output():
    buffer = OutputBuffer(head_chars=100, tail_chars=10_000)
    waiter = asyncio.ensure_future(buffer.wait_for(r"session id: (?P<id>\w+)\n", what="the id"))
    for _ in range(200):
        buffer.feed(b"y" * 999 + b"\n")
        await asyncio.sleep(0)                  # the waiter looks after every read
    buffer.feed(b"session i")
    await asyncio.sleep(0)
    buffer.feed(b"d: abc123\n")
    match = await asyncio.wait_for(waiter, 5)
    assert match.group("id") == "abc123"


def test_a_character_split_across_reads_is_decoded_whole():
    buffer = OutputBuffer()
    data = "naïve – ✓".encode()
    for i in range(len(data)):
        buffer.feed(data[i:i + 1])
    buffer.close()
    assert buffer.text == "naïve – ✓"


def test_the_api_key_printed_in_the_left_out_middle_is_still_in_the_text():
    buffer = OutputBuffer(watch=(KEY,), head_chars=100, tail_chars=10_000)
    buffer.feed(b"z" * 20_000)
    buffer.feed(f"token={KEY[:9]}".encode())      # the key split across two reads
    buffer.feed(f"{KEY[9:]} end".encode())
    for _ in range(50):
        buffer.feed(b"w" * 1000)
    assert "characters not kept" in buffer.text
    assert f"token={KEY} end" in buffer.text
