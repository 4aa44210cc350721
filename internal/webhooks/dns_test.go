package webhooks_test

import (
	"context"
	"encoding/binary"
	"io"
	"net"
	"net/netip"
	"strings"

	"golang.org/x/net/dns/dnsmessage"
)

// fakeDNS is a resolver that answers from names alone, never from the network: each name
// resolves to its address, any other name does not exist.
func fakeDNS(names map[string]netip.Addr) *net.Resolver {
	return resolverAnswering(func(q dnsmessage.Question) ([]netip.Addr, bool) {
		addr, known := names[strings.TrimSuffix(q.Name.String(), ".")]
		return []netip.Addr{addr}, known
	})
}

// resolverAnswering is a resolver whose every query answer answers: the addresses of the
// name (those of the question's family are sent), or false when the name does not exist.
func resolverAnswering(answer func(dnsmessage.Question) ([]netip.Addr, bool)) *net.Resolver {
	return &net.Resolver{PreferGo: true, Dial: func(context.Context, string, string) (net.Conn, error) {
		client, server := net.Pipe()
		go answerDNS(server, answer)
		return client, nil
	}}
}

// answerDNS answers one query in DNS over TCP framing (a net.Pipe is not a PacketConn, so
// the resolver frames its query so): a two-byte length, then the message.
func answerDNS(conn net.Conn, answer func(dnsmessage.Question) ([]netip.Addr, bool)) {
	defer conn.Close()
	var n uint16
	if binary.Read(conn, binary.BigEndian, &n) != nil {
		return
	}
	query := make([]byte, n)
	if _, err := io.ReadFull(conn, query); err != nil {
		return
	}
	var p dnsmessage.Parser
	h, err := p.Start(query)
	if err != nil {
		return
	}
	q, err := p.Question()
	if err != nil {
		return
	}
	addrs, known := answer(q)
	reply := dnsmessage.Message{
		Header:    dnsmessage.Header{ID: h.ID, Response: true, RecursionAvailable: true},
		Questions: []dnsmessage.Question{q},
	}
	if !known {
		reply.RCode = dnsmessage.RCodeNameError
	}
	rr := dnsmessage.ResourceHeader{Name: q.Name, Class: dnsmessage.ClassINET, TTL: 60}
	for _, addr := range addrs {
		switch {
		case q.Type == dnsmessage.TypeA && addr.Is4():
			reply.Answers = append(reply.Answers, dnsmessage.Resource{Header: rr, Body: &dnsmessage.AResource{A: addr.As4()}})
		case q.Type == dnsmessage.TypeAAAA && addr.Is6():
			reply.Answers = append(reply.Answers, dnsmessage.Resource{Header: rr, Body: &dnsmessage.AAAAResource{AAAA: addr.As16()}})
		}
	}
	msg, err := reply.AppendPack(make([]byte, 2, 514))
	if err != nil {
		return
	}
	binary.BigEndian.PutUint16(msg, uint16(len(msg)-2))
	_, _ = conn.Write(msg)
}
