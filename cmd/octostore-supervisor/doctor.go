package main

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/urfave/cli/v2"

	"github.com/octostore-supervisor/supervisor/cmd/internal/holdcli"
	"github.com/octostore-supervisor/supervisor/contain"
	"github.com/octostore-supervisor/supervisor/hold"
	"github.com/octostore-supervisor/supervisor/hold/etcd"
)

func doctorCommand(env []string, stdout io.Writer) *cli.Command {
	return &cli.Command{
		Name:  "doctor",
		Usage: "show what containment this host offers and which backend auto chooses; with --server etcd://…, whether that cluster can be an authority",
		Flags: append([]cli.Flag{&cli.BoolFlag{Name: "json", Usage: "print one JSON object"}},
			holdcli.TransportFlags("also probe this etcd authority (etcd://… or etcds://…): reachable members, version, leader, round trip")...),
		OnUsageError: usageErr,
		Action: func(c *cli.Context) error {
			d := doctorReport{Diagnosis: contain.Doctor(systemdScope())}
			if c.IsSet("server") {
				probe, err := probeEtcd(c, env)
				if err != nil {
					return err
				}
				d.Authority = &probe
			}
			d.print(stdout, c.Bool("json"))
			if d.Authority != nil && !d.Authority.Usable {
				return cli.Exit("octostore-supervisor: "+d.Authority.Reason, hold.ExitSoftware)
			}
			return nil
		},
	}
}

// doctorReport is the host's containment facts and, when asked, an
// authority's.
type doctorReport struct {
	contain.Diagnosis
	Authority *authorityProbe `json:"authority,omitempty"`
}

// authorityProbe is what doctor learned of an etcd cluster: enough for a user
// to tell whether holds on it would work, and how fast a renewal can be.
type authorityProbe struct {
	Server  string        `json:"server"`
	Usable  bool          `json:"usable"`
	Reason  string        `json:"reason,omitempty"`
	Members []memberProbe `json:"members"`
}

type memberProbe struct {
	Endpoint    string  `json:"endpoint"`
	Reachable   bool    `json:"reachable"`
	Version     string  `json:"version,omitempty"`
	Leader      bool    `json:"leader"`
	RoundTripMS float64 `json:"round_trip_ms,omitempty"`
	Error       string  `json:"error,omitempty"`
}

// probeEtcd opens --server exactly as a hold would (same URL rules, files and
// credentials) and asks every member for its status.
func probeEtcd(c *cli.Context, env []string) (authorityProbe, error) {
	raw := c.String("server")
	scheme, _, _ := strings.Cut(strings.ToLower(raw), "://")
	if scheme != "etcd" && scheme != "etcds" && scheme != "etcd+unix" {
		return authorityProbe{}, usageError{"doctor --server takes an etcd://, etcds:// or etcd+unix:// URL; for an OctoStore server or the local authority use `octostore election status`"}
	}
	a, err := etcd.Open(raw, lookupIn(env), holdcli.Transport(c))
	if err != nil {
		return authorityProbe{}, usageError{err.Error()}
	}
	defer a.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	info, err := a.Probe(ctx)
	p := authorityProbe{Server: info.Server, Usable: true}
	for _, m := range info.Members {
		mp := memberProbe{Endpoint: m.Endpoint, Reachable: m.Reachable, Version: m.Version, Leader: m.IsLeader}
		if m.Reachable {
			mp.RoundTripMS = float64(m.RoundTrip.Microseconds()) / 1000
			if !etcd.VersionOK(m.Version) {
				p.Usable, p.Reason = false, fmt.Sprintf("member %s runs etcd %s, below the supported floor (3.4.31, 3.5.13, 3.6.0)", m.Endpoint, m.Version)
			}
		} else if m.Err != nil {
			mp.Error = hold.TerminalSafe(m.Err.Error())
		}
		p.Members = append(p.Members, mp)
	}
	switch {
	case err != nil:
		p.Usable, p.Reason = false, "no etcd member answered: "+hold.TerminalSafe(err.Error())
	case info.LeaderID == 0:
		p.Usable, p.Reason = false, "the cluster has no leader"
	}
	return p, nil
}

func (d doctorReport) print(w io.Writer, asJSON bool) {
	if asJSON {
		b, _ := json.Marshal(d)
		fmt.Fprintln(w, string(b))
		return
	}
	for _, f := range d.Facts {
		fmt.Fprintf(w, "%-28s %s  %s\n", f.Name, yesNo(f.OK), f.Detail)
	}
	fmt.Fprintf(w, "%-28s %s  %s\n", "auto chooses", d.Backend, d.Reason)
	if a := d.Authority; a != nil {
		fmt.Fprintf(w, "%-28s %s  %s\n", "etcd authority", yesNo(a.Usable), hold.TerminalSafe(a.Server)+reasonSuffix(a.Reason))
		for _, m := range a.Members {
			detail := m.Error
			if m.Reachable {
				role := "follower"
				if m.Leader {
					role = "leader"
				}
				detail = fmt.Sprintf("etcd %s, %s, round trip %.1f ms", m.Version, role, m.RoundTripMS)
			}
			fmt.Fprintf(w, "%-28s %s  %s\n", "  member "+m.Endpoint, yesNo(m.Reachable), detail)
		}
	}
}

func yesNo(ok bool) string {
	if ok {
		return "yes"
	}
	return "no "
}

func reasonSuffix(r string) string {
	if r == "" {
		return ""
	}
	return ": " + r
}
