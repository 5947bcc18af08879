#include "admin/operator_plane.h"

#include <charconv>
#include <optional>
#include <utility>

#include <boost/asio/post.hpp>
#include <fmt/format.h>
#include <nlohmann/json.hpp>
#include <spdlog/spdlog.h>

#include "admin/restore_history.h"
#include "backup/files.h"
#include "backup/manifest.h"
#include "backup/verify.h"
#include "base/unique_function.h"
#include "protocol/digest.h"
#include "runtime/await_callback.h"
#include "state/command.h"

namespace dstream::admin {
namespace {

namespace asio = boost::asio;
namespace http = boost::beast::http;
using json = nlohmann::json;
using protocol::error_code;

// Operator routes keep their own answers, in the error body's shape
// (extensions 11), with the status of the code.
edge::admin_answer refusal(const error& e) {
    json body{{"error", {{"code", protocol::wire_code(e.code)}, {"message", e.message}}}};
    return {protocol::http_status(e.code), body.dump()};
}

edge::admin_answer refuse(error_code code, std::string message) {
    return refusal(make_error(code, std::move(message)));
}

edge::admin_answer answer_json(const json& body) { return {200, body.dump()}; }

std::string hex64(std::uint64_t v) { return fmt::format("{:016x}", v); }

// The JSON body of a request, with the string members it must have.
result<json> body_with(const std::string& text, std::initializer_list<const char*> members) {
    json body = json::parse(text, nullptr, false);
    if (body.is_discarded() || !body.is_object()) {
        return make_error(error_code::invalid_request, "the body must be a JSON object");
    }
    for (const char* m : members) {
        if (!body.contains(m) || !body[m].is_string() || body[m].get<std::string>().empty()) {
            return make_error(error_code::invalid_request,
                              std::string("the body needs the string member ") + m);
        }
    }
    return body;
}

// Group work on a node that does not lead the group: 503 NO_LEADER naming
// the leader this node knows (0: none), for the caller to ask it.
edge::admin_answer not_leading(const service::placement& p) {
    json body{{"error",
               {{"code", "NO_LEADER"}, {"message", "this node does not lead the group"}}},
              {"group", p.group},
              {"leader", p.leader}};
    return {503, body.dump()};
}

// Runs `job` on the plane's thread and hands its value back to the
// coroutine. A plain function (runtime/await_callback.h): the callable is
// built before the co_await, never inside it.
template <typename T>
asio::awaitable<T> on_work_thread(asio::thread_pool& pool, unique_function<T()>& job) {
    return runtime::await_callback<T>([&pool, &job](runtime::deliver_fn<T> done) {
        asio::post(pool, [&job, done = std::move(done)]() mutable { done(job()); });
    });
}

json report_of(const std::vector<state::rewritten_stream>& streams) {
    json out = json::array();
    for (const auto& s : streams) {
        json row{{"stream", s.key}};
        row["before"] = s.before ? json(std::to_string(*s.before)) : json(nullptr);
        row["incarnation"] = s.incarnation ? json(std::to_string(*s.incarnation)) : json(nullptr);
        if (s.incarnation) {
            row["previous_incarnation"] = s.previous_incarnation
                                              ? json(std::to_string(*s.previous_incarnation))
                                              : json(nullptr);
            row["inherited_offset"] = s.inherited_offset;
            row["tail"] = s.tail;
        }
        out.push_back(std::move(row));
    }
    return out;
}

// The most a restore_group command's image may hold: the command is one
// WAL record and one peer frame, each at most 64 MiB.
constexpr std::size_t max_restore_image_bytes = 56u << 20;

// A backup's image with every stream's hot tail moved to a cold chunk of the
// node's store (written here, under its deterministic key, before the
// restore that references it is proposed); the image that references them.
result<std::string> detach_hot_tails(const std::string& image, storage::object_store& store) {
    std::uint32_t image_group = 0;
    std::uint64_t index = 0;
    auto state = state::group_state::restore_checkpoint(image, image_group, index);
    if (!state) return state.err();
    std::vector<state::group_state::detached_tail> tails;
    state->detach_hot_tails(
        [](std::string_view key, const state::stream& s, std::uint64_t start, std::uint64_t end) {
            return service::chunk_object_key(key, s.incarnation, start, end);
        },
        tails);
    for (const auto& tail : tails) {
        std::string bytes;
        for (const auto& slice : tail.bytes) bytes.append(slice.view());
        // One key, one content: a chunk the node holds at this size is this one.
        auto held = store.size(tail.object_key);
        if (held && *held && **held == bytes.size()) continue;
        if (auto put = store.put(tail.object_key, bytes); !put) return put.err();
    }
    return state::sealed_checkpoint_bytes(state->capture_checkpoint(image_group, index));
}

// What a group's restore reads of the backup before it proposes: the
// manifest's id and the group's image, its objects already in the node's store.
struct restore_input {
    std::string backup_id;
    std::string image;
    std::uint64_t objects_copied = 0;
    std::uint64_t objects_present = 0;
};

}  // namespace

operator_plane::operator_plane(plane_inputs in) : _in(std::move(in)) {}

operator_plane::~operator_plane() { stop(); }

void operator_plane::stop() {
    _work.stop();
    _work.join();
}

asio::awaitable<edge::admin_answer> operator_plane::answer(edge::admin_request& request) {
    const std::string& path = request.path;
    const bool get = request.method == http::verb::get || request.method == http::verb::head;
    const bool post = request.method == http::verb::post;
    if (path == "/__ursula/health" && get) co_return answer_json({{"status", "live"}});
    if (path == "/__ursula/admin/node" && get) co_return node_info();
    if (path == "/__ursula/backup/begin" && post) co_return co_await backup_begin(request.body);
    if (path == "/__ursula/backup/manifest" && post) {
        co_return co_await backup_manifest(request.body);
    }
    // The routes of one group: /__ursula/{backup,restore,accept-loss}/groups/{g}.
    for (const std::string_view route :
         {"/__ursula/backup/groups/", "/__ursula/restore/groups/", "/__ursula/accept-loss/groups/"}) {
        if (!path.starts_with(route)) continue;
        const std::string_view digits = std::string_view(path).substr(route.size());
        std::uint32_t group = 0;
        const auto [end, ec] = std::from_chars(digits.data(), digits.data() + digits.size(), group);
        if (digits.empty() || ec != std::errc() || end != digits.data() + digits.size() ||
            group >= _in.engine.group_count()) {
            co_return refuse(error_code::not_found, "no such group");
        }
        if (!post) co_return refuse(error_code::method_not_allowed, "POST only");
        if (route.starts_with("/__ursula/backup")) {
            co_return co_await backup_group(group, request.body);
        }
        if (route.starts_with("/__ursula/restore")) {
            co_return co_await restore_group(group, request.body);
        }
        co_return co_await accept_loss(group);
    }
    co_return refuse(error_code::not_found, "no such operator route");
}

edge::admin_answer operator_plane::node_info() const {
    json groups = json::array();
    for (std::uint32_t g = 0; g < _in.engine.group_count(); ++g) {
        const service::placement p = _in.engine.group_placement(g);
        groups.push_back({{"group", g}, {"hosted", p.hosted}, {"leads", p.leads},
                          {"leader", p.leader}, {"term", p.term}});
    }
    // Where each node's admin listener is, for the commands to take a
    // group's work to its leader.
    json nodes = json::array();
    if (_in.cluster != nullptr) {
        for (const auto& n : _in.cluster->nodes()) {
            nodes.push_back({{"node", n.id}, {"admin", n.admin ? json(n.admin->text()) : json(nullptr)}});
        }
    }
    return answer_json({{"cluster_id", _in.cluster_id},
                        {"node", _in.node_id},
                        {"nodes", std::move(nodes)},
                        {"group_count", _in.engine.group_count()},
                        {"cold_store", _in.cold != nullptr},
                        {"groups", std::move(groups)}});
}

asio::awaitable<edge::admin_answer> operator_plane::backup_begin(const std::string& text) {
    auto body = body_with(text, {"location"});
    if (!body) co_return refusal(body.err());
    const std::string location = (*body)["location"];
    unique_function<result<std::string>()> job = [&]() -> result<std::string> {
        auto store = backup::open_location(location, _in.location);
        if (!store) return store.err();
        auto present = (*store)->size(std::string(backup::manifest_name));
        if (!present) return present.err();
        if (*present) {
            return make_error(error_code::invalid_request,
                              "the location holds a backup already: give each backup a location "
                              "of its own");
        }
        // The backup's id: 128 random bits.
        return fmt::format("{:016x}{:016x}", _in.random.next(), _in.random.next());
    };
    const result<std::string> id = co_await on_work_thread(_work, job);
    if (!id) co_return refusal(id.err());
    co_return answer_json({{"backup_id", *id},
                           {"cluster_id", _in.cluster_id},
                           {"group_count", _in.engine.group_count()},
                           {"created_ms", _in.clock.wall_ms()}});
}

asio::awaitable<edge::admin_answer> operator_plane::backup_group(std::uint32_t group,
                                                                 const std::string& text) {
    auto body = body_with(text, {"location", "backup_id"});
    if (!body) co_return refusal(body.err());
    const std::string location = (*body)["location"];
    if (!backup::is_valid_backup_id((*body)["backup_id"].get<std::string>())) {
        co_return refuse(error_code::invalid_request, "not a backup id");
    }
    // The group's state at one applied index, its objects held from the
    // moment of the capture until they are copied.
    const service::hold_objects_fn hold = [this](const std::vector<std::string>& keys) {
        return _in.cold != nullptr ? _in.cold->hold(keys) : std::shared_ptr<void>();
    };
    service::group_capture capture = co_await _in.engine.capture_group(group, hold);
    if (capture.refusal) {
        if (capture.refusal->code == error_code::no_leader) {
            co_return not_leading(_in.engine.group_placement(group));
        }
        co_return refusal(*capture.refusal);
    }
    unique_function<result<std::vector<backup::file_entry>>()> job =
        [&]() -> result<std::vector<backup::file_entry>> {
        auto store = backup::open_location(location, _in.location);
        if (!store) return store.err();
        std::vector<backup::file_entry> files;
        auto image = backup::put_file(**store, backup::group_image_path(group),
                                      state::sealed_checkpoint_bytes(capture.image));
        if (!image) return image.err();
        capture.image = {};  // the hot tails' blocks go
        files.push_back(std::move(*image));
        for (const auto& key : capture.objects) {
            if (_in.cold == nullptr) break;
            auto copied = backup::copy_object(*_in.cold, key, **store, backup::object_path(key));
            if (!copied) return copied.err();
            files.push_back(std::move(*copied));
        }
        capture.hold.reset();  // removals deferred meanwhile run now, on this thread
        return files;
    };
    result<std::vector<backup::file_entry>> files = co_await on_work_thread(_work, job);
    if (!files) {
        spdlog::warn("backup of group {} failed: {}", group, files.err().message);
        co_return refusal(files.err());
    }
    json out{{"group", group},
             {"index", capture.index},
             {"term", capture.term},
             {"history_id", hex64(capture.history_id)},
             {"streams", capture.streams},
             {"files", json::array()}};
    std::uint64_t bytes = 0;
    for (const auto& f : *files) {
        out["files"].push_back({{"path", f.path}, {"size", f.size}, {"blake3", f.blake3}});
        bytes += f.size;
    }
    out["bytes"] = bytes;
    spdlog::info("backup: group {} at index {} ({} streams, {} files, {} bytes)", group,
                 capture.index, capture.streams, files->size(), bytes);
    co_return answer_json(out);
}

asio::awaitable<edge::admin_answer> operator_plane::backup_manifest(const std::string& text) {
    auto body = body_with(text, {"location", "manifest"});
    if (!body) co_return refusal(body.err());
    const std::string location = (*body)["location"];
    const std::string manifest_text = (*body)["manifest"];
    auto parsed = backup::parse(manifest_text);
    if (!parsed) co_return refusal(parsed.err());
    unique_function<status()> job = [&]() -> status {
        auto store = backup::open_location(location, _in.location);
        if (!store) return store.err();
        // Every file it lists is in place before the manifest makes the
        // backup whole (sizes here; `backup verify` reads every byte).
        for (const auto& f : parsed->files) {
            auto size = (*store)->size(f.path);
            if (!size) return size.err();
            if (!*size || **size != f.size) {
                return make_error(error_code::invalid_request,
                                  "the backup's file " + f.path + " is missing or has another size");
            }
        }
        return (*store)->put(std::string(backup::manifest_name), manifest_text);
    };
    const status written = co_await on_work_thread(_work, job);
    if (!written) co_return refusal(written.err());
    spdlog::info("backup {} complete: {} groups, {} files", parsed->id, parsed->group_count,
                 parsed->files.size());
    co_return answer_json({{"backup_id", parsed->id}});
}

asio::awaitable<edge::admin_answer> operator_plane::restore_group(std::uint32_t group,
                                                                  const std::string& text) {
    auto body = body_with(text, {"location"});
    if (!body) co_return refusal(body.err());
    const std::string location = (*body)["location"];
    const service::placement here = _in.engine.group_placement(group);
    if (!here.leads) co_return not_leading(here);
    // Off the connection's strand: the manifest, the image (digests checked)
    // and the cold objects it references, put in the node's store under
    // their keys before the command that references them (an object no
    // command references is an orphan for the sweep, never a hole).
    unique_function<result<restore_input>()> job = [&]() -> result<restore_input> {
        auto store = backup::open_location(location, _in.location);
        if (!store) return store.err();
        auto size = (*store)->size(std::string(backup::manifest_name));
        if (!size) return size.err();
        if (!*size) {
            return make_error(error_code::invalid_request,
                              "the location holds no whole backup (no manifest)");
        }
        std::string text_of_manifest;
        if (auto got = (*store)->get(std::string(backup::manifest_name), 0, **size,
                                     text_of_manifest);
            !got) {
            return got.err();
        }
        auto m = backup::parse(text_of_manifest);
        if (!m) return m.err();
        if (m->group_count != _in.engine.group_count()) {
            return make_error(error_code::invalid_request,
                              fmt::format("the backup holds {} groups and the node {}: streams "
                                          "hash to groups by their count",
                                          m->group_count, _in.engine.group_count()));
        }
        restore_input in;
        in.backup_id = m->id;
        auto image = backup::read_checked(**store, *backup::find_file(*m, backup::group_image_path(group)));
        if (!image) return image.err();
        auto objects = backup::objects_of_image(*image, group);
        if (!objects) return objects.err();
        if (!objects->empty() && _in.cold == nullptr) {
            return make_error(error_code::no_cold_store,
                              "the backup holds cold objects and this node has no cold store");
        }
        for (const auto& key : *objects) {
            const backup::file_entry* entry = backup::find_file(*m, backup::object_path(key));
            if (entry == nullptr) {
                return make_error(error_code::invalid_request,
                                  "the backup lacks the object " + key);
            }
            // One key, one content: an object the node holds already at its
            // size is the backup's.
            auto held = _in.cold->size(key);
            if (held && *held && **held == entry->size) {
                ++in.objects_present;
                continue;
            }
            if (auto put = backup::restore_object(**store, *entry, *_in.cold, key); !put) {
                return put.err();
            }
            ++in.objects_copied;
        }
        in.image = std::move(*image);
        if (_in.cold != nullptr) {
            // The hot tails of the backup go to the store as chunks, so the
            // entry carries references only (a WAL record and a peer frame
            // hold 64 MiB at most; hot tails may hold more).
            auto detached = detach_hot_tails(in.image, *_in.cold);
            if (!detached) return detached.err();
            in.image = std::move(*detached);
        }
        if (in.image.size() > max_restore_image_bytes) {
            return make_error(error_code::request_too_large,
                              fmt::format("the image of group {} is {} bytes, more than a restore "
                                          "carries ({}): restore into a node with a cold store",
                                          group, in.image.size(), max_restore_image_bytes));
        }
        return in;
    };
    result<restore_input> input = co_await on_work_thread(_work, job);
    if (!input) co_return refusal(input.err());
    const std::uint64_t history_id = restore_history_id(input->backup_id, group);
    const json& prepare = (*body)["prepare"];
    if (prepare.is_boolean() && prepare.get<bool>()) {
        // The first pass of a restore: every file of the group checked and
        // its objects in place, nothing proposed.
        co_return answer_json({{"group", group},
                               {"backup_id", input->backup_id},
                               {"history_id", hex64(history_id)},
                               {"prepared", true},
                               {"objects_copied", input->objects_copied},
                               {"objects_present", input->objects_present}});
    }
    state::command_body command =
        state::restore_group{history_id, input->backup_id, std::move(input->image)};
    const state::apply_result r = co_await _in.engine.propose_to_group(group, command);
    if (r.refusal) {
        if (r.refusal->code == error_code::no_leader) {
            co_return not_leading(_in.engine.group_placement(group));
        }
        co_return refusal(*r.refusal);
    }
    spdlog::info("restore: group {} {} backup {} (history {}, {} streams reported)", group,
                 r.already_restored ? "was already restored from" : "restored from",
                 input->backup_id, hex64(history_id), r.rewritten.size());
    co_return answer_json({{"group", group},
                           {"backup_id", input->backup_id},
                           {"history_id", hex64(history_id)},
                           {"already_restored", r.already_restored},
                           {"objects_copied", input->objects_copied},
                           {"objects_present", input->objects_present},
                           {"streams", report_of(r.rewritten)}});
}

asio::awaitable<edge::admin_answer> operator_plane::accept_loss(std::uint32_t group) {
    const service::placement here = _in.engine.group_placement(group);
    if (!here.leads) co_return not_leading(here);
    // The proposer draws the new history id (every replica applies it alike).
    std::uint64_t history_id = 0;
    while (history_id == 0) history_id = _in.random.next();
    state::command_body command = state::rewrite_history{history_id};
    const state::apply_result r = co_await _in.engine.propose_to_group(group, command);
    if (r.refusal) {
        if (r.refusal->code == error_code::no_leader) {
            co_return not_leading(_in.engine.group_placement(group));
        }
        co_return refusal(*r.refusal);
    }
    spdlog::warn("accept-loss: group {} starts history {} from what it holds ({} streams)", group,
                 hex64(history_id), r.rewritten.size());
    co_return answer_json({{"group", group},
                           {"history_id", hex64(history_id)},
                           {"streams", report_of(r.rewritten)}});
}

}  // namespace dstream::admin
