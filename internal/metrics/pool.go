package metrics

import (
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/prometheus/client_golang/prometheus"
)

// poolStat is one series read from pgxpool.Stat at scrape time.
type poolStat struct {
	desc  *prometheus.Desc
	kind  prometheus.ValueType
	value func(*pgxpool.Stat) float64
}

// poolCollector exports the connection pool's own counters when /metrics is scraped: how
// many connections are busy, and how often and how long requests waited for one.
type poolCollector struct {
	pool  *pgxpool.Pool
	stats []poolStat
}

func newPoolCollector(pool *pgxpool.Pool) *poolCollector {
	stat := func(name, help string, kind prometheus.ValueType, value func(*pgxpool.Stat) float64) poolStat {
		return poolStat{desc: prometheus.NewDesc("pgxpool_"+name, help, nil, nil), kind: kind, value: value}
	}
	gauge, counter := prometheus.GaugeValue, prometheus.CounterValue
	return &poolCollector{pool: pool, stats: []poolStat{
		stat("max_conns", "Largest number of connections the pool opens.", gauge,
			func(s *pgxpool.Stat) float64 { return float64(s.MaxConns()) }),
		stat("total_conns", "Connections open now, busy or idle or being opened.", gauge,
			func(s *pgxpool.Stat) float64 { return float64(s.TotalConns()) }),
		stat("acquired_conns", "Connections in use by a request or a worker now.", gauge,
			func(s *pgxpool.Stat) float64 { return float64(s.AcquiredConns()) }),
		stat("idle_conns", "Connections open and free now.", gauge,
			func(s *pgxpool.Stat) float64 { return float64(s.IdleConns()) }),
		stat("acquires_total", "Connections handed out.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.AcquireCount()) }),
		stat("acquire_duration_seconds_total", "Time spent waiting for a connection, summed.", counter,
			func(s *pgxpool.Stat) float64 { return s.AcquireDuration().Seconds() }),
		stat("empty_acquires_total", "Acquires that found no idle connection and had to wait or open one.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.EmptyAcquireCount()) }),
		stat("canceled_acquires_total", "Acquires given up because the request's context ended.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.CanceledAcquireCount()) }),
		stat("new_conns_total", "Connections opened.", counter,
			func(s *pgxpool.Stat) float64 { return float64(s.NewConnsCount()) }),
	}}
}

func (c *poolCollector) Describe(ch chan<- *prometheus.Desc) {
	for _, s := range c.stats {
		ch <- s.desc
	}
}

func (c *poolCollector) Collect(ch chan<- prometheus.Metric) {
	stat := c.pool.Stat()
	for _, s := range c.stats {
		ch <- prometheus.MustNewConstMetric(s.desc, s.kind, s.value(stat))
	}
}
