"""The offline network's packet reading and answering, on bytes built here: what an outbound
packet tried to reach, and the answer that makes its sender fail at once."""

import ipaddress
import struct

import pytest

from harness.offline.packets import ACK, FIN, RST, SYN, checksum, dns_question, parse, reply


def ip4(src: str, dst: str, proto: int, body: bytes) -> bytes:
    header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 1, 0x4000, 64, proto, 0,
                         ipaddress.ip_address(src).packed, ipaddress.ip_address(dst).packed)
    return header[:10] + struct.pack("!H", checksum(header)) + header[12:] + body


def ip6(src: str, dst: str, proto: int, body: bytes) -> bytes:
    return struct.pack("!IHBB16s16s", 6 << 28, len(body), proto, 64, ipaddress.ip_address(src).packed,
                       ipaddress.ip_address(dst).packed) + body


def tcp(sport: int, dport: int, flags: int, seq: int = 1000, ack: int = 0, data: bytes = b"") -> bytes:
    return struct.pack("!HHIIBBHHH", sport, dport, seq, ack, 5 << 4, flags, 65535, 0, 0) + data


def udp(sport: int, dport: int, data: bytes) -> bytes:
    return struct.pack("!HHHH", sport, dport, 8 + len(data), 0) + data


def dns_query(name: str, ident: int = 0x1234) -> bytes:
    qname = b"".join(bytes([len(label)]) + label.encode() for label in name.split(".")) + b"\0"
    return struct.pack("!HHHHHH", ident, 0x0100, 1, 0, 0, 0) + qname + struct.pack("!HH", 1, 1)


def pseudo_sum(packet: bytes) -> int:
    """The transport checksum over the pseudo-header: 0 when the packet's own is right."""
    if packet[0] >> 4 == 4:
        body = packet[20:]
        return checksum(packet[12:20] + struct.pack("!BBH", 0, packet[9], len(body)) + body)
    body = packet[40:]
    return checksum(packet[8:40] + struct.pack("!I3xB", len(body), packet[6]) + body)


def test_a_tcp_syn_is_an_attempt_at_its_destination():
    out = parse(ip4("192.0.2.2", "93.184.216.34", 6, tcp(40000, 443, SYN)))
    assert out is not None
    assert (out.proto, out.dst, out.port, out.sport, out.dns_name) == ("tcp", "93.184.216.34", 443, 40000, None)


def test_a_dns_query_is_an_attempt_with_the_name_asked():
    out = parse(ip4("192.0.2.2", "10.255.255.53", 17, udp(5353, 53, dns_query("registry.npmjs.org"))))
    assert out is not None and (out.proto, out.port, out.dns_name) == ("udp", 53, "registry.npmjs.org")


def test_ipv6_is_read_too():
    out = parse(ip6("2001:db8::2", "2606:4700::1111", 6, tcp(40000, 443, SYN)))
    assert out is not None and (out.version, out.dst, out.port) == (6, "2606:4700::1111", 443)


@pytest.mark.parametrize("packet", [
    b"", b"\x45\x00", ip4("192.0.2.2", "1.1.1.1", 1, b"\x08\x00\x00\x00\x00\x00\x00\x00"),  # a ping
    ip4("192.0.2.2", "1.1.1.1", 6, b"\x00" * 10),  # a TCP header cut short
    ip4("192.0.2.2", "1.1.1.1", 17, udp(1, 2, b""))[:-4],  # shorter than its header says
])
def test_what_is_not_a_whole_tcp_or_udp_packet_is_no_attempt(packet):
    assert parse(packet) is None


def test_a_fragment_is_no_attempt():
    packet = bytearray(ip4("192.0.2.2", "1.1.1.1", 17, udp(1, 2, b"x")))
    packet[6:8] = struct.pack("!H", 0x2000 | 10)  # more fragments, offset 80
    assert parse(bytes(packet)) is None


def test_a_dns_response_or_a_compressed_name_is_not_a_question():
    query = dns_query("example.com")
    assert dns_question(query) is not None
    assert dns_question(query[:2] + b"\x81\x80" + query[4:]) is None
    assert dns_question(query[:12] + b"\xc0\x0c" + query[-4:]) is None
    assert dns_question(query[:-3]) is None


def test_a_syn_gets_a_reset_that_acknowledges_it():
    answer = reply(ip4("192.0.2.2", "93.184.216.34", 6, tcp(40000, 443, SYN, seq=1000)))
    assert answer is not None
    assert answer[12:16] == ipaddress.ip_address("93.184.216.34").packed and answer[16:20] == bytes([192, 0, 2, 2])
    assert checksum(answer[:20]) == 0 and pseudo_sum(answer) == 0
    sport, dport, seq, ack = struct.unpack_from("!HHII", answer, 20)
    assert (sport, dport, seq, ack, answer[33]) == (443, 40000, 0, 1001, RST | ACK)


def test_a_segment_with_an_ack_gets_a_reset_at_that_sequence():
    answer = reply(ip6("2001:db8::2", "2606:4700::1111", 6, tcp(40000, 443, ACK | FIN, seq=5, ack=777, data=b"hi")))
    assert answer is not None and pseudo_sum(answer) == 0
    _, _, seq, ack = struct.unpack_from("!HHII", answer, 40)
    assert (seq, ack, answer[53]) == (777, 0, RST)


def test_a_reset_is_not_answered():
    assert reply(ip4("192.0.2.2", "1.1.1.1", 6, tcp(1, 2, RST))) is None


def test_a_dns_query_gets_refused_with_its_question():
    query = dns_query("registry.npmjs.org", ident=0xBEEF)
    answer = reply(ip4("192.0.2.2", "10.255.255.53", 17, udp(5353, 53, query)))
    assert answer is not None and checksum(answer[:20]) == 0 and pseudo_sum(answer) == 0
    assert struct.unpack_from("!HH", answer, 20) == (53, 5353)
    message = answer[28:]
    ident, flags, questions = struct.unpack_from("!HHH", message)
    assert (ident, flags & 0x8000, flags & 0x0100, flags & 0xF, questions) == (0xBEEF, 0x8000, 0x0100, 5, 1)
    assert message[12:] == query[12:]


def test_other_udp_gets_icmp_port_unreachable_quoting_it():
    sent = ip4("192.0.2.2", "8.8.8.8", 17, udp(40000, 443, b"quic" * 10))
    answer = reply(sent)
    assert answer is not None and answer[9] == 1 and checksum(answer[20:]) == 0
    assert answer[20:22] == b"\x03\x03" and answer[28:] == sent[:28]


def test_other_udp_over_ipv6_gets_icmpv6_port_unreachable():
    sent = ip6("2001:db8::2", "2001:4860:4860::8888", 17, udp(40000, 123, b"ntp"))
    answer = reply(sent)
    assert answer is not None and answer[6] == 58 and pseudo_sum(answer) == 0
    assert answer[40:42] == b"\x01\x04" and answer[48:] == sent


def test_what_is_not_tcp_or_udp_gets_no_answer():
    assert reply(ip4("192.0.2.2", "1.1.1.1", 1, b"\x08\x00\x00\x00\x00\x00\x00\x00")) is None
