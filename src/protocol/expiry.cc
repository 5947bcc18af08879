#include "protocol/expiry.h"

#include <cstdio>

#include "protocol/decimal.h"

namespace dstream::protocol {
namespace {

// Days since 1970-01-01 of a proleptic Gregorian date (Howard Hinnant's algorithm).
std::int64_t days_from_civil(std::int64_t y, unsigned m, unsigned d) {
    y -= m <= 2 ? 1 : 0;
    const std::int64_t era = (y >= 0 ? y : y - 399) / 400;
    const auto yoe = static_cast<unsigned>(y - era * 400);
    const unsigned doy = (153 * (m + (m > 2 ? -3 : 9)) + 2) / 5 + d - 1;
    const unsigned doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    return era * 146097 + static_cast<std::int64_t>(doe) - 719468;
}

void civil_from_days(std::int64_t z, std::int64_t& y, unsigned& m, unsigned& d) {
    z += 719468;
    const std::int64_t era = (z >= 0 ? z : z - 146096) / 146097;
    const auto doe = static_cast<unsigned>(z - era * 146097);
    const unsigned yoe = (doe - doe / 1460 + doe / 36524 - doe / 146096) / 365;
    y = static_cast<std::int64_t>(yoe) + era * 400;
    const unsigned doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    const unsigned mp = (5 * doy + 2) / 153;
    d = doy - (153 * mp + 2) / 5 + 1;
    m = mp < 10 ? mp + 3 : mp - 9;
    y += m <= 2 ? 1 : 0;
}

bool read_digits(std::string_view& s, std::size_t n, unsigned& out) {
    if (s.size() < n) return false;
    out = 0;
    for (std::size_t i = 0; i < n; ++i) {
        if (s[i] < '0' || s[i] > '9') return false;
        out = out * 10 + static_cast<unsigned>(s[i] - '0');
    }
    s.remove_prefix(n);
    return true;
}

bool expect_char(std::string_view& s, char c) {
    if (s.empty() || s.front() != c) return false;
    s.remove_prefix(1);
    return true;
}

bool is_leap(std::int64_t y) { return (y % 4 == 0 && y % 100 != 0) || y % 400 == 0; }

unsigned days_in_month(std::int64_t y, unsigned m) {
    static constexpr unsigned days[] = {31, 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31};
    return m == 2 && is_leap(y) ? 29 : days[m - 1];
}

}  // namespace

std::uint64_t ms_between(unix_ms since, unix_ms now) {
    return now > since ? static_cast<std::uint64_t>(now) - static_cast<std::uint64_t>(since) : 0;
}

result<std::uint64_t> parse_ttl_seconds(std::string_view text) {
    const auto bad = [] { return make_error(error_code::invalid_header, "Stream-TTL must be a non-negative integer without leading zeros"); };
    const auto value = parse_canonical_decimal(text, 999'999'999'999'999);  // 15 digits
    if (!value) return bad();
    return *value;
}

result<unix_ms> parse_rfc3339(std::string_view text) {
    const auto bad = [] {
        return make_error(error_code::invalid_header,
                          "Stream-Expires-At must be an RFC 3339 timestamp");
    };
    std::string_view s = text;
    unsigned year = 0, month = 0, day = 0, hour = 0, minute = 0, second = 0;
    if (!read_digits(s, 4, year) || !expect_char(s, '-') || !read_digits(s, 2, month) ||
        !expect_char(s, '-') || !read_digits(s, 2, day)) {
        return bad();
    }
    if (s.empty() || (s.front() != 'T' && s.front() != 't' && s.front() != ' ')) return bad();
    s.remove_prefix(1);
    if (!read_digits(s, 2, hour) || !expect_char(s, ':') || !read_digits(s, 2, minute) ||
        !expect_char(s, ':') || !read_digits(s, 2, second)) {
        return bad();
    }
    if (month < 1 || month > 12 || day < 1 || day > days_in_month(year, month) || hour > 23 ||
        minute > 59 || second > 60) {
        return bad();
    }
    std::int64_t millis = 0;
    if (!s.empty() && s.front() == '.') {
        s.remove_prefix(1);
        std::size_t digits = 0;
        std::int64_t scale = 100;
        while (!s.empty() && s.front() >= '0' && s.front() <= '9') {
            millis += (s.front() - '0') * scale;
            scale /= 10;
            s.remove_prefix(1);
            ++digits;
        }
        if (digits == 0) return bad();
    }
    std::int64_t offset_minutes = 0;
    if (s == "Z" || s == "z") {
        s = {};
    } else if (!s.empty() && (s.front() == '+' || s.front() == '-')) {
        const int sign = s.front() == '-' ? -1 : 1;
        s.remove_prefix(1);
        unsigned oh = 0, om = 0;
        if (!read_digits(s, 2, oh) || !expect_char(s, ':') || !read_digits(s, 2, om) || oh > 23 ||
            om > 59) {
            return bad();
        }
        offset_minutes = sign * static_cast<std::int64_t>(oh * 60 + om);
    } else {
        return bad();
    }
    if (!s.empty()) return bad();
    const std::int64_t days = days_from_civil(year, month, day);
    const std::int64_t seconds = days * 86400 + hour * 3600 + minute * 60 +
                                 std::min<unsigned>(second, 59) - offset_minutes * 60;
    const unix_ms instant = seconds * 1000 + millis;
    // An offset can carry a date in year 0000 or 9999 across the year's
    // edge; RFC 3339 cannot write the UTC instant then (Stream-Expires-At is
    // rendered back in UTC), so it is refused like any other bad date.
    constexpr unix_ms day_ms = 86'400'000;
    if (instant < days_from_civil(0, 1, 1) * day_ms ||
        instant >= days_from_civil(10000, 1, 1) * day_ms) {
        return bad();
    }
    return instant;
}

std::string format_rfc3339(unix_ms instant) {
    std::int64_t seconds = instant / 1000;
    std::int64_t millis = instant % 1000;
    if (millis < 0) {
        millis += 1000;
        seconds -= 1;
    }
    std::int64_t days = seconds / 86400;
    std::int64_t rem = seconds % 86400;
    if (rem < 0) {
        rem += 86400;
        days -= 1;
    }
    std::int64_t y = 0;
    unsigned m = 0, d = 0;
    civil_from_days(days, y, m, d);
    char buf[40];
    std::snprintf(buf, sizeof buf, "%04lld-%02u-%02uT%02lld:%02lld:%02lld.%03lldZ",
                  static_cast<long long>(y), m, d, static_cast<long long>(rem / 3600),
                  static_cast<long long>(rem % 3600 / 60), static_cast<long long>(rem % 60),
                  static_cast<long long>(millis));
    return buf;
}

result<expiry_config> parse_expiry(std::optional<std::string_view> ttl,
                                   std::optional<std::string_view> expires_at) {
    if (ttl && expires_at) {
        return make_error(error_code::invalid_header,
                          "Stream-TTL and Stream-Expires-At cannot both be set");
    }
    expiry_config config;
    if (ttl) {
        auto seconds = parse_ttl_seconds(*ttl);
        if (!seconds) return seconds.err();
        config.ttl_seconds = *seconds;
    }
    if (expires_at) {
        auto instant = parse_rfc3339(*expires_at);
        if (!instant) return instant.err();
        config.expires_at = *instant;
    }
    return config;
}

}  // namespace dstream::protocol
