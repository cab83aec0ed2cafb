"""The packets an offline agent sends out, read, and the answers that make it fail at once.

Why pure functions on bytes: everything the agent sends past loopback arrives at the run's
TUN device as a raw IP packet (no link header). Each is read here to say what it tried to
reach (protocol, address, port, and for DNS the name asked), and answered so the sender
fails within a round trip instead of waiting out its own timeouts: a TCP segment gets a
reset, a DNS query a REFUSED answer, any other UDP datagram an ICMP port unreachable. What
is neither TCP nor UDP (the kernel's own IPv6 chatter, a ping) is not an outbound attempt
and gets no answer.
"""

from __future__ import annotations

import ipaddress
import struct
from dataclasses import dataclass

TCP, UDP, ICMP4, ICMP6 = 6, 17, 1, 58
SYN, RST, ACK, FIN = 0x02, 0x04, 0x10, 0x01
DNS_PORT = 53
DNS_REFUSED = 5
HOP_LIMIT = 64
ICMP6_MAX_BYTES = 1280  # an ICMPv6 error quotes as much of the offending packet as fits in the minimum MTU
ICMP4_QUOTE_BYTES = 8  # an ICMPv4 error quotes the offending header and this much of its payload


@dataclass(frozen=True)
class Outbound:
    """One packet the agent sent out, as far as it says what was tried: ``proto`` ("tcp" or
    "udp"), the destination ``dst`` and ``port``, the source (to tell flows apart), and for
    a DNS query the name it asked (``dns_name``)."""

    version: int
    proto: str
    src: str
    sport: int
    dst: str
    port: int
    dns_name: str | None = None

    @property
    def flow(self) -> tuple[str, str, int, str, int, str | None]:
        """What makes a new attempt: a new connection (its addresses and ports), or a new
        name asked over the same one."""
        return (self.proto, self.src, self.sport, self.dst, self.port, self.dns_name)


@dataclass(frozen=True)
class _Ip:
    version: int
    proto: int
    src: bytes
    dst: bytes
    header: bytes
    payload: bytes


def _ip(packet: bytes) -> _Ip | None:
    """The IP header's facts and the transport payload; None for what is not a whole,
    unfragmented IPv4 or IPv6 packet."""
    if not packet:
        return None
    version = packet[0] >> 4
    if version == 4 and len(packet) >= 20:
        ihl = (packet[0] & 0x0F) * 4
        total = struct.unpack_from("!H", packet, 2)[0]
        fragment = struct.unpack_from("!H", packet, 6)[0] & 0x1FFF
        if ihl < 20 or total < ihl or len(packet) < total or fragment:
            return None
        return _Ip(4, packet[9], packet[12:16], packet[16:20], packet[:ihl], packet[ihl:total])
    if version == 6 and len(packet) >= 40:
        length = struct.unpack_from("!H", packet, 4)[0]
        if len(packet) < 40 + length:
            return None
        return _Ip(6, packet[6], packet[8:24], packet[24:40], packet[:40], packet[40:40 + length])
    return None


def dns_question(payload: bytes) -> tuple[str, bytes] | None:
    """The name a DNS query asks, and its question section as sent; None for what is not a
    query with a question."""
    if len(payload) < 12:
        return None
    flags, questions = struct.unpack_from("!HH", payload, 2)
    if flags & 0x8000 or questions < 1:  # a response, or nothing asked
        return None
    labels: list[str] = []
    at = 12
    while True:
        if at >= len(payload):
            return None
        size = payload[at]
        at += 1
        if size == 0:
            break
        if size & 0xC0 or at + size > len(payload):  # a query's first name is never compressed
            return None
        labels.append(payload[at:at + size].decode("ascii", "replace"))
        at += size
    if at + 4 > len(payload):
        return None
    return ".".join(labels), payload[12:at + 4]


def parse(packet: bytes) -> Outbound | None:
    """What ``packet`` tried to reach, if it is a TCP segment or a UDP datagram."""
    ip = _ip(packet)
    if ip is None or ip.proto not in (TCP, UDP) or len(ip.payload) < (20 if ip.proto == TCP else 8):
        return None
    sport, dport = struct.unpack_from("!HH", ip.payload)
    name = None
    if ip.proto == UDP and dport == DNS_PORT and (question := dns_question(ip.payload[8:])) is not None:
        name = question[0]
    return Outbound(version=ip.version, proto="tcp" if ip.proto == TCP else "udp",
                    src=str(ipaddress.ip_address(ip.src)), sport=sport,
                    dst=str(ipaddress.ip_address(ip.dst)), port=dport, dns_name=name)


def reply(packet: bytes) -> bytes | None:
    """The packet that makes ``packet``'s sender fail at once; None when none is due (a
    reset is never answered, and neither is what is not TCP or UDP)."""
    ip = _ip(packet)
    if ip is None:
        return None
    if ip.proto == TCP and len(ip.payload) >= 20:
        return _reset(ip)
    if ip.proto == UDP and len(ip.payload) >= 8:
        dport = struct.unpack_from("!H", ip.payload, 2)[0]
        question = dns_question(ip.payload[8:]) if dport == DNS_PORT else None
        return _refused(ip, question[1]) if question is not None else _unreachable(ip)
    return None


def _reset(ip: _Ip) -> bytes | None:
    """RFC 9293's reset for a segment that reaches no connection."""
    sport, dport, seq, ack = struct.unpack_from("!HHII", ip.payload)
    offset, flags = (ip.payload[12] >> 4) * 4, ip.payload[13]
    if flags & RST:
        return None
    if flags & ACK:
        our_seq, our_ack, our_flags = ack, 0, RST
    else:
        length = len(ip.payload) - offset + (1 if flags & SYN else 0) + (1 if flags & FIN else 0)
        our_seq, our_ack, our_flags = 0, (seq + length) & 0xFFFFFFFF, RST | ACK
    segment = struct.pack("!HHIIBBHHH", dport, sport, our_seq, our_ack, 5 << 4, our_flags, 0, 0, 0)
    return _packet(ip.version, TCP, ip.dst, ip.src, segment, checksum_at=16)


def _refused(ip: _Ip, question: bytes) -> bytes:
    """A DNS answer REFUSED to the query in ``ip``: the resolver gives up on this server."""
    sport, dport = struct.unpack_from("!HH", ip.payload)
    query = ip.payload[8:]
    ident, flags = struct.unpack_from("!HH", query)
    answer_flags = 0x8000 | (flags & 0x7900) | DNS_REFUSED  # QR, the query's opcode and RD kept
    message = struct.pack("!HHHHHH", ident, answer_flags, 1, 0, 0, 0) + question
    datagram = struct.pack("!HHHH", dport, sport, 8 + len(message), 0) + message
    return _packet(ip.version, UDP, ip.dst, ip.src, datagram, checksum_at=6)


def _unreachable(ip: _Ip) -> bytes:
    """ICMP port unreachable for the datagram in ``ip``, quoting it as the protocol asks."""
    if ip.version == 4:
        body = struct.pack("!BBHI", 3, 3, 0, 0) + ip.header + ip.payload[:ICMP4_QUOTE_BYTES]
        body = body[:2] + struct.pack("!H", checksum(body)) + body[4:]
        return _packet(4, ICMP4, ip.dst, ip.src, body)
    quote = (ip.header + ip.payload)[:ICMP6_MAX_BYTES - 48]
    return _packet(6, ICMP6, ip.dst, ip.src, struct.pack("!BBHI", 1, 4, 0, 0) + quote, checksum_at=2)


def _packet(version: int, proto: int, src: bytes, dst: bytes, body: bytes, checksum_at: int | None = None) -> bytes:
    """An IP packet carrying ``body``; its checksum at ``checksum_at`` filled in over the
    pseudo-header (TCP, UDP, ICMPv6)."""
    if checksum_at is not None:
        if version == 4:
            pseudo = src + dst + struct.pack("!BBH", 0, proto, len(body))
        else:
            pseudo = src + dst + struct.pack("!I3xB", len(body), proto)
        value = checksum(pseudo + body) or (0xFFFF if proto == UDP else 0)
        body = body[:checksum_at] + struct.pack("!H", value) + body[checksum_at + 2:]
    if version == 4:
        header = struct.pack("!BBHHHBBH4s4s", 0x45, 0, 20 + len(body), 0, 0x4000, HOP_LIMIT, proto, 0, src, dst)
        header = header[:10] + struct.pack("!H", checksum(header)) + header[12:]
    else:
        header = struct.pack("!IHBB16s16s", 6 << 28, len(body), proto, HOP_LIMIT, src, dst)
    return header + body


def checksum(data: bytes) -> int:
    """The Internet checksum (RFC 1071) of ``data``."""
    if len(data) % 2:
        data += b"\0"
    total = sum(struct.unpack(f"!{len(data) // 2}H", data))
    while total >> 16:
        total = (total & 0xFFFF) + (total >> 16)
    return ~total & 0xFFFF
