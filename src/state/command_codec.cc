#include <cstring>
#include <utility>

#include "base/binary.h"
#include "state/command.h"

namespace dstream::state {
namespace {

// Version 2 added the fork of create_stream and the boundary check of
// publish_snapshot and retain; version 1 records still decode.
constexpr std::uint8_t codec_version = 2;

void put_optional_u64(binary_writer& w, const std::optional<std::uint64_t>& v) {
    w.put_u8(v ? 1 : 0);
    if (v) w.put_u64(*v);
}

bool get_optional_u64(binary_reader& r, std::optional<std::uint64_t>& v) {
    std::uint8_t present = 0;
    if (!r.get_u8(present) || present > 1) return false;
    if (present == 0) return true;
    std::uint64_t value = 0;
    if (!r.get_u64(value)) return false;
    v = value;
    return true;
}

void put_optional_i64(binary_writer& w, const std::optional<std::int64_t>& v) {
    w.put_u8(v ? 1 : 0);
    if (v) w.put_u64(static_cast<std::uint64_t>(*v));
}

void put_boundary(binary_writer& w, const std::optional<boundary_check>& b) {
    w.put_u8(b ? 1 : 0);
    if (b) {
        w.put_u64(b->incarnation);
        w.put_u8(b->message_end ? 1 : 0);
    }
}

bool get_boundary(binary_reader& r, std::uint8_t version, std::optional<boundary_check>& b) {
    if (version < 2) return true;
    std::uint8_t present = 0;
    if (!r.get_u8(present) || present > 1) return false;
    if (present == 0) return true;
    std::uint8_t end = 0;
    b.emplace();
    if (!r.get_u64(b->incarnation) || !r.get_u8(end) || end > 1) return false;
    b->message_end = end == 1;
    return true;
}

bool get_optional_i64(binary_reader& r, std::optional<std::int64_t>& v) {
    std::optional<std::uint64_t> raw;
    if (!get_optional_u64(r, raw)) return false;
    if (raw) v = static_cast<std::int64_t>(*raw);
    return true;
}

}  // namespace

void put_identity(binary_writer& w, const protocol::write_identity& id) {
    w.put_u8(id ? 1 : 0);
    if (id) {
        for (auto b : *id) w.put_u8(b);
    }
}

bool get_identity(binary_reader& r, protocol::write_identity& id) {
    std::uint8_t present = 0;
    if (!r.get_u8(present) || present > 1) return false;
    if (present == 0) return true;
    id.emplace();
    for (auto& b : *id) {
        if (!r.get_u8(b)) return false;
    }
    return true;
}

namespace {

struct encoder {
    binary_writer& w;
    void operator()(const init_group& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::init_group));
        w.put_u64(c.history_id);
    }
    void operator()(const create_stream& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::create_stream));
        w.put_string(c.key);
        w.put_string(c.content_type);
        put_optional_u64(w, c.expiry.ttl_seconds);
        put_optional_i64(w, c.expiry.expires_at);
        w.put_u8(c.closed ? 1 : 0);
        w.put_string(c.body);
        put_optional_u64(w, c.if_incarnation);
        w.put_u8(c.fork ? 1 : 0);
        if (c.fork) {
            w.put_string(c.fork->source_key);
            w.put_u64(c.fork->source_incarnation);
            w.put_u64(c.fork->offset);
            w.put_u64(c.fork->reference);
        }
    }
    void operator()(const add_fork_ref& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::add_fork_ref));
        w.put_string(c.key);
        w.put_u64(c.incarnation);
        w.put_u64(c.offset);
        w.put_string(c.fork_key);
        w.put_u64(c.reference);
    }
    void operator()(const drop_fork_ref& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::drop_fork_ref));
        w.put_string(c.key);
        w.put_u64(c.incarnation);
        w.put_u64(c.reference);
    }
    void operator()(const append& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::append));
        w.put_string(c.key);
        w.put_string(c.content_type);
        w.put_string(c.body);
        w.put_u8(c.close ? 1 : 0);
        w.put_u8(c.stream_seq ? 1 : 0);
        if (c.stream_seq) w.put_string(*c.stream_seq);
        w.put_u8(c.producer ? 1 : 0);
        if (c.producer) {
            w.put_string(c.producer->id);
            w.put_u64(c.producer->epoch);
            w.put_u64(c.producer->seq);
            put_identity(w, c.producer->identity);
        }
        put_optional_u64(w, c.if_incarnation);
        w.put_u8(c.content_fault ? 1 : 0);
        if (c.content_fault) {
            w.put_u8(static_cast<std::uint8_t>(c.content_fault->code));
            w.put_string(c.content_fault->message);
        }
    }
    void operator()(const delete_stream& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::delete_stream));
        w.put_string(c.key);
        put_optional_u64(w, c.if_incarnation);
    }
    void operator()(const flush_chunk& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::flush_chunk));
        w.put_string(c.key);
        w.put_u64(c.incarnation);
        w.put_u64(c.start);
        w.put_u64(c.end);
        w.put_string(c.object_key);
    }
    void operator()(const publish_snapshot& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::publish_snapshot));
        w.put_string(c.key);
        put_optional_u64(w, c.if_incarnation);
        w.put_u64(c.offset);
        w.put_string(c.content_type);
        for (auto b : c.digest) w.put_u8(b);
        w.put_u64(c.size);
        w.put_string(c.body);
        w.put_string(c.object_key);
        put_boundary(w, c.boundary);
    }
    void operator()(const rewrite_history& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::rewrite_history));
        w.put_u64(c.history_id);
    }
    void operator()(const restore_group& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::restore_group));
        w.put_u64(c.history_id);
        w.put_string(c.backup_id);
        w.put_string(c.image);
    }
    void operator()(const retain& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::retain));
        w.put_string(c.key);
        put_optional_u64(w, c.if_incarnation);
        w.put_u64(c.offset);
        put_boundary(w, c.boundary);
    }
    void operator()(const expire_stream& c) {
        w.put_u8(static_cast<std::uint8_t>(command_type::expire_stream));
        w.put_string(c.key);
        w.put_u64(c.incarnation);
    }
};

bool get_bool(binary_reader& r, bool& out) {
    std::uint8_t v = 0;
    if (!r.get_u8(v) || v > 1) return false;
    out = v == 1;
    return true;
}

bool decode_body(binary_reader& r, std::uint8_t version, command_body& body) {
    std::uint8_t type = 0;
    if (!r.get_u8(type)) return false;
    switch (static_cast<command_type>(type)) {
        case command_type::init_group: {
            init_group c;
            if (!r.get_u64(c.history_id)) return false;
            body = std::move(c);
            return true;
        }
        case command_type::create_stream: {
            create_stream c;
            if (!r.get_string(c.key) || !r.get_string(c.content_type) ||
                !get_optional_u64(r, c.expiry.ttl_seconds) ||
                !get_optional_i64(r, c.expiry.expires_at) || !get_bool(r, c.closed) ||
                !r.get_string(c.body) || !get_optional_u64(r, c.if_incarnation)) {
                return false;
            }
            bool forked = false;
            if (version >= 2 && !get_bool(r, forked)) return false;
            if (forked) {
                c.fork.emplace();
                if (!r.get_string(c.fork->source_key) || !r.get_u64(c.fork->source_incarnation) ||
                    !r.get_u64(c.fork->offset) || !r.get_u64(c.fork->reference)) {
                    return false;
                }
            }
            body = std::move(c);
            return true;
        }
        case command_type::add_fork_ref: {
            add_fork_ref c;
            if (!r.get_string(c.key) || !r.get_u64(c.incarnation) || !r.get_u64(c.offset) ||
                !r.get_string(c.fork_key) || !r.get_u64(c.reference)) {
                return false;
            }
            body = std::move(c);
            return true;
        }
        case command_type::drop_fork_ref: {
            drop_fork_ref c;
            if (!r.get_string(c.key) || !r.get_u64(c.incarnation) || !r.get_u64(c.reference))
                return false;
            body = std::move(c);
            return true;
        }
        case command_type::append: {
            append c;
            bool has_seq = false;
            bool has_producer = false;
            bool has_fault = false;
            if (!r.get_string(c.key) || !r.get_string(c.content_type) || !r.get_string(c.body) ||
                !get_bool(r, c.close) || !get_bool(r, has_seq)) {
                return false;
            }
            if (has_seq) {
                c.stream_seq.emplace();
                if (!r.get_string(*c.stream_seq)) return false;
            }
            if (!get_bool(r, has_producer)) return false;
            if (has_producer) {
                c.producer.emplace();
                if (!r.get_string(c.producer->id) || !r.get_u64(c.producer->epoch) ||
                    !r.get_u64(c.producer->seq) || !get_identity(r, c.producer->identity)) {
                    return false;
                }
            }
            if (!get_optional_u64(r, c.if_incarnation) || !get_bool(r, has_fault)) return false;
            if (has_fault) {
                std::uint8_t code = 0;
                c.content_fault.emplace();
                if (!r.get_u8(code) || !r.get_string(c.content_fault->message)) return false;
                if (code >= protocol::error_code_count) return false;
                c.content_fault->code = static_cast<protocol::error_code>(code);
            }
            body = std::move(c);
            return true;
        }
        case command_type::delete_stream: {
            delete_stream c;
            if (!r.get_string(c.key) || !get_optional_u64(r, c.if_incarnation)) return false;
            body = std::move(c);
            return true;
        }
        case command_type::flush_chunk: {
            flush_chunk c;
            if (!r.get_string(c.key) || !r.get_u64(c.incarnation) || !r.get_u64(c.start) ||
                !r.get_u64(c.end) || !r.get_string(c.object_key)) {
                return false;
            }
            body = std::move(c);
            return true;
        }
        case command_type::publish_snapshot: {
            publish_snapshot c;
            if (!r.get_string(c.key) || !get_optional_u64(r, c.if_incarnation) ||
                !r.get_u64(c.offset) || !r.get_string(c.content_type)) {
                return false;
            }
            for (auto& b : c.digest) {
                if (!r.get_u8(b)) return false;
            }
            if (!r.get_u64(c.size) || !r.get_string(c.body) || !r.get_string(c.object_key) ||
                !get_boundary(r, version, c.boundary)) {
                return false;
            }
            body = std::move(c);
            return true;
        }
        case command_type::rewrite_history: {
            rewrite_history c;
            if (!r.get_u64(c.history_id)) return false;
            body = c;
            return true;
        }
        case command_type::restore_group: {
            restore_group c;
            if (!r.get_u64(c.history_id) || !r.get_string(c.backup_id) || !r.get_string(c.image)) {
                return false;
            }
            body = std::move(c);
            return true;
        }
        case command_type::retain: {
            retain c;
            if (!r.get_string(c.key) || !get_optional_u64(r, c.if_incarnation) ||
                !r.get_u64(c.offset) || !get_boundary(r, version, c.boundary)) {
                return false;
            }
            body = std::move(c);
            return true;
        }
        case command_type::expire_stream: {
            expire_stream c;
            if (!r.get_string(c.key) || !r.get_u64(c.incarnation)) return false;
            body = std::move(c);
            return true;
        }
    }
    return false;
}

}  // namespace

const std::string* command_key(const command_body& body) {
    return std::visit(
        [](const auto& c) -> const std::string* {
            if constexpr (requires { c.key; }) {
                return &c.key;
            } else {
                return nullptr;
            }
        },
        body);
}

std::string* command_key(command_body& body) {
    return const_cast<std::string*>(command_key(std::as_const(body)));
}

std::string encode_command(const command& cmd) { return encode_command(cmd.now_ms, cmd.body); }

std::string encode_command(protocol::unix_ms now_ms, const command_body& body) {
    binary_writer w;
    // One allocation per record: an append's fields other than its body
    // (key, content type, producer, sequence) fit in the margin.
    constexpr std::size_t fields_margin = 512;
    const auto* appended = std::get_if<append>(&body);
    const auto* restored = std::get_if<restore_group>(&body);
    w.reserve(fields_margin + (appended != nullptr ? appended->body.size() : 0) +
              (restored != nullptr ? restored->image.size() : 0));
    w.put_u8(codec_version);
    w.put_u64(static_cast<std::uint64_t>(now_ms));
    std::visit(encoder{w}, body);
    return std::move(w).take();
}

result<command> decode_command(std::string_view bytes) {
    binary_reader r(bytes);
    std::uint8_t version = 0;
    std::uint64_t now = 0;
    command cmd;
    if (!r.get_u8(version) || version == 0 || version > codec_version || !r.get_u64(now) ||
        !decode_body(r, version, cmd.body) || !r.at_end()) {
        return make_error(protocol::error_code::internal, "undecodable command record");
    }
    cmd.now_ms = static_cast<std::int64_t>(now);
    return cmd;
}

}  // namespace dstream::state
