// The metrics primitives and their Prometheus text rendering (exposition
// format 0.0.4): what a scraper parses must be exact.
#include <string>

#include <gtest/gtest.h>

#include "metrics/counter.h"
#include "metrics/exposition.h"
#include "metrics/gauge.h"
#include "metrics/histogram.h"
#include "metrics/registry.h"

namespace dstream::metrics {
namespace {

constexpr std::uint64_t test_bounds[] = {10, 100, 1000};

TEST(Exposition, CounterFamilyHasHelpTypeAndSample) {
    counter c;
    c.inc();
    c.inc(41);
    exposition out;
    out.counter("x_total", "Things counted", c.value());
    EXPECT_EQ(out.text(), "# HELP x_total Things counted\n# TYPE x_total counter\nx_total 42\n");
}

TEST(Exposition, GaugeGoesDownAndRendersNegativeAndFractionalValues) {
    gauge g;
    g.add(3);
    g.add(-5);
    exposition out;
    out.gauge("g", "A gauge", static_cast<double>(g.value()));
    out.gauge("h", "Another", 0.25);
    EXPECT_EQ(out.text(),
              "# HELP g A gauge\n# TYPE g gauge\ng -2\n# HELP h Another\n# TYPE h gauge\nh 0.25\n");
}

TEST(Exposition, GaugeHoldGivesItsUnitBack) {
    gauge g;
    {
        const gauge_hold a(g);
        const gauge_hold b(g);
        EXPECT_EQ(g.value(), 2);
    }
    EXPECT_EQ(g.value(), 0);
}

TEST(Exposition, LabelValuesAndHelpAreEscaped) {
    exposition out;
    out.family("m", metric_type::counter, "line one\nback\\slash \"quoted\"");
    out.sample("m", {{"a", "x\"y"}, {"b", "back\\slash"}, {"c", "two\nlines"}}, std::uint64_t{7});
    EXPECT_EQ(out.text(),
              "# HELP m line one\\nback\\\\slash \"quoted\"\n"
              "# TYPE m counter\n"
              "m{a=\"x\\\"y\",b=\"back\\\\slash\",c=\"two\\nlines\"} 7\n");
}

TEST(Exposition, SpecialFloatsUsePrometheusSpelling) {
    exposition out;
    out.sample("f", {}, std::numeric_limits<double>::infinity());
    out.sample("f", {}, -std::numeric_limits<double>::infinity());
    out.sample("f", {}, std::numeric_limits<double>::quiet_NaN());
    EXPECT_EQ(out.text(), "f +Inf\nf -Inf\nf NaN\n");
}

TEST(Histogram, BucketsAreCumulativeInclusiveAndEndInInf) {
    histogram<test_bounds> h;
    for (const std::uint64_t v : {0, 10, 11, 100, 999, 1000, 1001, 50000}) h.observe(v);
    const histogram_snapshot s = h.read();
    ASSERT_EQ(s.counts.size(), 4u);
    EXPECT_EQ(s.counts[0], 2u);  // 0, 10: a bound is inclusive (le)
    EXPECT_EQ(s.counts[1], 2u);  // 11, 100
    EXPECT_EQ(s.counts[2], 2u);  // 999, 1000
    EXPECT_EQ(s.counts[3], 2u);  // above every bound
    EXPECT_EQ(s.sum, 0u + 10 + 11 + 100 + 999 + 1000 + 1001 + 50000);

    exposition out;
    out.histogram("lat", "Latency", s);
    EXPECT_EQ(out.text(),
              "# HELP lat Latency\n# TYPE lat histogram\n"
              "lat_bucket{le=\"10\"} 2\n"
              "lat_bucket{le=\"100\"} 4\n"
              "lat_bucket{le=\"1000\"} 6\n"
              "lat_bucket{le=\"+Inf\"} 8\n"
              "lat_sum 53121\n"
              "lat_count 8\n");
}

TEST(Histogram, DivisorExportsMicrosecondsAsSecondsAndLabelsPrecedeLe) {
    histogram<bounds::latency_us> h;
    h.observe(1500);  // 1.5 ms
    exposition out;
    out.buckets("d_seconds", {{"route", "append"}}, h.read(), 1e6);
    const std::string& t = out.text();
    EXPECT_NE(t.find("d_seconds_bucket{route=\"append\",le=\"5e-05\"} 0\n"), std::string::npos)
        << t;
    EXPECT_NE(t.find("d_seconds_bucket{route=\"append\",le=\"0.001\"} 0\n"), std::string::npos)
        << t;
    EXPECT_NE(t.find("d_seconds_bucket{route=\"append\",le=\"0.0025\"} 1\n"), std::string::npos)
        << t;
    EXPECT_NE(t.find("d_seconds_bucket{route=\"append\",le=\"60\"} 1\n"), std::string::npos) << t;
    EXPECT_NE(t.find("d_seconds_bucket{route=\"append\",le=\"+Inf\"} 1\n"), std::string::npos) << t;
    EXPECT_NE(t.find("d_seconds_sum{route=\"append\"} 0.0015\n"), std::string::npos) << t;
    EXPECT_NE(t.find("d_seconds_count{route=\"append\"} 1\n"), std::string::npos) << t;
}

TEST(Registry, RendersCollectorsInTheOrderAdded) {
    registry r;
    r.add([](exposition& out) { out.counter("a_total", "A", 1); });
    r.add([](exposition& out) { out.gauge("b", "B", 2); });
    EXPECT_EQ(r.render(),
              "# HELP a_total A\n# TYPE a_total counter\na_total 1\n"
              "# HELP b B\n# TYPE b gauge\nb 2\n");
}

struct sample_metrics : registered<sample_metrics> {
    counter events;
    void collect(exposition& out) const { out.counter("sample_events_total", "E", events.value()); }
};

TEST(Registry, AModuleRegistersOnceWithTheNodeRegistry) {
    sample_metrics::get().events.inc(3);
    sample_metrics::get().events.inc();
    const std::string text = node_registry().render();
    const auto first = text.find("sample_events_total 4\n");
    EXPECT_NE(first, std::string::npos) << text;
    EXPECT_EQ(text.find("sample_events_total 4\n", first + 1), std::string::npos) << text;
}

}  // namespace
}  // namespace dstream::metrics
