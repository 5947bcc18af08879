#include "protocol/json_text.h"

#include <benchmark/benchmark.h>

#include <cstdint>
#include <string>

namespace dstream::protocol {
namespace {

constexpr std::size_t target_body_bytes = std::size_t{1} << 20;

// Telemetry-like events in one array body, the shape a typical append carries.
// `separator` and `indent` choose between compact and pretty-printed text.
std::string event_array_body(const std::string& separator, const std::string& indent) {
    const std::string nl = indent.empty() ? "" : "\n";
    std::string body = "[" + nl;
    for (std::uint64_t i = 0; body.size() < target_body_bytes; ++i) {
        if (i != 0) {
            body += "," + nl;
        }
        const std::string id = std::to_string(1'000'000 + i * 7919);
        const std::string f = indent + indent;
        body += indent + "{" + nl;
        body += f + "\"id\":" + separator + id + "," + nl;
        body += f + "\"type\":" + separator + (i % 3 == 0 ? "\"page_view\"" : "\"click\"") + "," + nl;
        body += f + "\"captured_at\":" + separator + "\"2026-07-18T12:34:56." + std::to_string(i % 1000) + "Z\"," + nl;
        body += f + "\"user\":" + separator + "{\"id\":" + separator + "\"u_" + id + "\"," + separator +
                "\"name\":" + separator + "\"Ren\\u00e9e Q. Example\"," + separator + "\"locale\":" + separator +
                "\"fr-CA\"}," + nl;
        body += f + "\"path\":" + separator + "\"/products/" + id + "/reviews?page=2&sort=recent\"," + nl;
        body += f + "\"duration_ms\":" + separator + std::to_string(i % 977) + ".25," + nl;
        body += f + "\"tags\":" + separator + "[\"web\"," + separator + "\"beta\"," + separator + "\"caf\xC3\xA9\"]," +
                nl;
        body += f + "\"ok\":" + separator + (i % 5 == 0 ? "false" : "true") + "," + nl;
        body += f + "\"referrer\":" + separator + "null" + nl;
        body += indent + "}";
    }
    return body + nl + "]";
}

// Long text values (documents, log lines) dominate: the string fast path decides.
std::string string_heavy_body() {
    const std::string paragraph =
        "Durable streams keep every message in order; readers resume from any offset and never miss a write. "
        "Quoted \\\"text\\\", a tab\\t, a newline\\n and some non-ASCII: na\xC3\xAFve caf\xC3\xA9 \xE2\x82\xAC 5 "
        "\xF0\x9F\x9A\x80. ";
    std::string body = "[";
    for (std::uint64_t i = 0; body.size() < 4 * target_body_bytes; ++i) {
        if (i != 0) {
            body += ", ";
        }
        body += "{\"seq\": " + std::to_string(i) + ", \"text\": \"";
        for (int p = 0; p < 40; ++p) {
            body += paragraph;
        }
        body += "\"}";
    }
    return body + "]";
}

void run(benchmark::State& state, const std::string& body) {
    for (auto _ : state) {
        auto r = normalize_json_body(body, empty_array_rule::reject);
        if (!r.ok()) {
            state.SkipWithError(r.err().message.c_str());
            break;
        }
        benchmark::DoNotOptimize(r->stored.data());
    }
    state.SetBytesProcessed(static_cast<std::int64_t>(state.iterations() * body.size()));
}

void bm_json_events_compact(benchmark::State& state) { run(state, event_array_body("", "")); }
void bm_json_events_spaced(benchmark::State& state) { run(state, event_array_body(" ", "")); }
void bm_json_events_pretty(benchmark::State& state) { run(state, event_array_body(" ", "  ")); }
void bm_json_string_heavy(benchmark::State& state) { run(state, string_heavy_body()); }

BENCHMARK(bm_json_events_compact);
BENCHMARK(bm_json_events_spaced);
BENCHMARK(bm_json_events_pretty);
BENCHMARK(bm_json_string_heavy);

}  // namespace
}  // namespace dstream::protocol
