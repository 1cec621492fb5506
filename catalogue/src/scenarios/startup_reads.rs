//! The reads a client makes at start-up (group H, H10–H12), before any thread: the account,
//! the config and its requirements, the models, the catalogues a UI lists (features,
//! collaboration modes, skills, hooks, permission profiles, providers, apps, plugins, MCP
//! servers, sections, projects) and the status reads, each with what codex promises of
//! its answer in a hermetic home with an API-key provider. A read the schema of a binary does
//! not list is not called there; the scenario's requirement is the set every binary with
//! the scenario has.

use anyhow::{Context, ensure};
use serde_json::{Value, json};

use super::rpc_error;
use crate::app_server::AppServer;
use crate::ensure_eq;
use crate::harness::scenario::{Ctx, Scenario};
use crate::harness::world::WorldOptions;
use crate::scenario;

/// The group's scenarios.
pub fn scenarios() -> Vec<Scenario> {
    vec![
        scenario!(
            "startup_account_config_and_models",
            "H10",
            "account/read says no account and no OpenAI auth needed with an API-key provider; \
             config/read returns the home's model, provider and approval policy, with \
             includeLayers the user layer; configRequirements/read none; model/list exactly \
             one default model, unique ids, limit 1 pages",
            account_config_models
        )
        .applies(|c| {
            c.require_methods(&[
                "account/read",
                "config/read",
                "configRequirements/read",
                "model/list",
            ])
        }),
        scenario!(
            "startup_catalogues",
            "H11",
            "the lists a client shows at start-up answer for a fresh home: features with \
             unique names, plan and default collaboration modes, the workspace's skills and \
             hooks, the three built-in permission profiles, the mock provider as default, no \
             apps, plugins, MCP servers, external agent configs or projects, the Pinned \
             section (each where the schema lists it)",
            catalogues
        )
        .applies(|c| {
            c.require_methods(&[
                "experimentalFeature/list",
                "collaborationMode/list",
                "skills/list",
                "hooks/list",
                "app/list",
                "plugin/list",
                "mcpServerStatus/list",
                "externalAgentConfig/detect",
                "modelProvider/capabilities/read",
            ])
        }),
        scenario!(
            "startup_status_reads",
            "H12",
            "status reads answer without an account: remote control disabled, the Windows \
             sandbox not configured, diagnostics of the live process, and the ChatGPT-account \
             reads (rate limits, usage, workspace messages) refused naming the missing \
             authentication (each where the schema lists it)",
            status_reads
        )
        .applies(|c| {
            c.require_methods(&[
                "remoteControl/status/read",
                "windowsSandbox/readiness",
                "account/rateLimits/read",
            ])
        }),
        scenario!(
            "fs_round_trip",
            "H13",
            "fs/writeFile, fs/readFile, fs/getMetadata, fs/createDirectory, fs/copy, \
             fs/readDirectory and fs/remove act on the workspace as asked; a removed path's \
             metadata is an error",
            fs_round_trip
        )
        .applies(|c| {
            c.require_methods(&[
                "fs/writeFile",
                "fs/readFile",
                "fs/getMetadata",
                "fs/createDirectory",
                "fs/copy",
                "fs/readDirectory",
                "fs/remove",
            ])
        }),
        scenario!(
            "fuzzy_file_search_finds_file",
            "H14",
            "fuzzyFileSearch finds a workspace file by a part of its name, with its root and \
             the matched indices",
            fuzzy
        )
        .applies(|c| c.require_methods(&["fuzzyFileSearch"])),
        scenario!(
            "config_writes_read_back",
            "H15",
            "config/value/write and config/batchWrite write the user config.toml, each answer \
             ok with a new version, and config/read returns the written values",
            config_writes
        )
        .applies(|c| {
            c.require_methods(&["config/value/write", "config/batchWrite", "config/read"])
        }),
        scenario!(
            "thread_sections_round_trip",
            "H16",
            "threadSection/create, update, list and delete, and thread/section/move: a thread \
             moved into a section is read back in it; the built-in Pinned section stays",
            sections
        )
        .applies(|c| {
            c.require_methods(&[
                "threadSection/create",
                "threadSection/update",
                "threadSection/list",
                "threadSection/delete",
                "thread/section/move",
            ])
        }),
    ]
}

/// `method` with `params`, with the method named in the error.
async fn call(app: &AppServer, method: &str, params: Value) -> anyhow::Result<Value> {
    app.call(method, params)
        .await
        .with_context(|| method.to_string())
}

/// The strings at `key` of each element of `list[field]`.
fn strings(list: &Value, field: &str, key: &str) -> Vec<String> {
    list[field]
        .as_array()
        .into_iter()
        .flatten()
        .filter_map(|e| e[key].as_str().map(String::from))
        .collect()
}

async fn account_config_models(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let account = call(&app, "account/read", json!({})).await?;
    ensure_eq!(account["account"], Value::Null, "account/read account");
    ensure_eq!(
        account["requiresOpenaiAuth"],
        json!(false),
        "account/read requiresOpenaiAuth"
    );
    let config = call(&app, "config/read", json!({})).await?;
    for (key, want) in [
        ("model", "mock-model"),
        ("model_provider", "mock"),
        ("approval_policy", "never"),
    ] {
        ensure_eq!(
            config["config"][key],
            json!(want),
            "config/read config.{key}"
        );
    }
    let layered = call(&app, "config/read", json!({"includeLayers": true})).await?;
    let user = world.home.join("config.toml").display().to_string();
    let layers = layered["layers"]
        .as_array()
        .with_context(|| format!("config/read includeLayers without layers: {layered}"))?;
    ensure!(
        layers.iter().any(|l| l.to_string().contains(&user)),
        "no config layer names {user}: {layers:?}"
    );
    let requirements = call(&app, "configRequirements/read", json!({})).await?;
    ensure_eq!(
        requirements["requirements"],
        Value::Null,
        "configRequirements/read requirements"
    );
    let models = call(&app, "model/list", json!({})).await?;
    let ids = strings(&models, "data", "id");
    ensure!(!ids.is_empty(), "model/list lists no model");
    let mut unique = ids.clone();
    unique.sort();
    unique.dedup();
    ensure_eq!(unique.len(), ids.len(), "model/list ids unique");
    let defaults = models["data"]
        .as_array()
        .into_iter()
        .flatten()
        .filter(|m| m["isDefault"] == json!(true))
        .count();
    ensure_eq!(defaults, 1, "model/list models with isDefault");
    let one = call(&app, "model/list", json!({"limit": 1})).await?;
    ensure_eq!(
        strings(&one, "data", "id"),
        vec![ids[0].clone()],
        "model/list limit 1"
    );
    ensure!(
        one["nextCursor"].is_string(),
        "model/list limit 1 of {} models has no nextCursor: {}",
        ids.len(),
        one["nextCursor"]
    );
    world.expect_requests(0).await?;
    world.finish().await
}

async fn catalogues(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let workspace = world.workspace.display().to_string();
    let features = call(&app, "experimentalFeature/list", json!({})).await?;
    let names = strings(&features, "data", "name");
    ensure!(!names.is_empty(), "experimentalFeature/list lists nothing");
    let mut unique = names.clone();
    unique.sort();
    unique.dedup();
    ensure_eq!(unique.len(), names.len(), "feature names unique");
    for f in features["data"].as_array().into_iter().flatten() {
        ensure!(
            f["enabled"].is_boolean() && f["stage"].is_string(),
            "feature without enabled or stage: {f}"
        );
    }
    let modes = call(&app, "collaborationMode/list", json!({})).await?;
    let mut kinds = strings(&modes, "data", "mode");
    kinds.sort();
    ensure_eq!(kinds, vec!["default", "plan"], "collaboration modes");
    for method in ["skills/list", "hooks/list"] {
        let listed = call(&app, method, json!({"cwds": [workspace]})).await?;
        ensure_eq!(
            strings(&listed, "data", "cwd"),
            vec![workspace.clone()],
            "{method} cwd"
        );
        ensure_eq!(listed["data"][0]["errors"], json!([]), "{method} errors");
    }
    let hooks = call(&app, "hooks/list", json!({"cwds": [workspace]})).await?;
    ensure_eq!(hooks["data"][0]["hooks"], json!([]), "hooks/list hooks");
    let empty = [
        ("app/list", "data"),
        ("plugin/list", "marketplaces"),
        ("plugin/installed", "marketplaces"),
        ("mcpServerStatus/list", "data"),
        ("externalAgentConfig/detect", "items"),
        ("project/list", "data"),
    ];
    for (method, field) in empty {
        if !ctx.caps.has_method(method) {
            continue;
        }
        let listed = call(&app, method, json!({})).await?;
        ensure_eq!(listed[field], json!([]), "{method} {field}");
    }
    let caps = call(&app, "modelProvider/capabilities/read", json!({})).await?;
    ensure!(
        caps["webSearch"].is_boolean() && caps["imageGeneration"].is_boolean(),
        "modelProvider/capabilities/read: {caps}"
    );
    if ctx.caps.has_method("permissionProfile/list") {
        let profiles = call(&app, "permissionProfile/list", json!({})).await?;
        ensure_eq!(
            strings(&profiles, "data", "id"),
            vec![":read-only", ":workspace", ":danger-full-access"],
            "permissionProfile/list ids"
        );
    }
    if ctx.caps.has_method("modelProvider/list") {
        let providers = call(&app, "modelProvider/list", json!({})).await?;
        ensure_eq!(
            providers["defaultProviderId"],
            json!("mock"),
            "modelProvider/list defaultProviderId"
        );
        let mock = providers["data"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|p| p["id"] == "mock")
            .with_context(|| format!("modelProvider/list has no mock: {providers}"))?;
        ensure_eq!(
            mock["baseUrl"],
            json!(world.sidecar.base_url()),
            "the mock provider's baseUrl"
        );
    }
    if ctx.caps.has_method("threadSection/list") {
        let sections = call(&app, "threadSection/list", json!({})).await?;
        ensure_eq!(
            strings(&sections, "data", "name"),
            vec!["Pinned"],
            "threadSection/list names"
        );
    }
    world.expect_requests(0).await?;
    world.finish().await
}

async fn status_reads(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let remote = call(&app, "remoteControl/status/read", json!({})).await?;
    ensure_eq!(remote["status"], json!("disabled"), "remote control status");
    let sandbox = call(&app, "windowsSandbox/readiness", json!({})).await?;
    ensure_eq!(
        sandbox["status"],
        json!("notConfigured"),
        "windowsSandbox/readiness status"
    );
    if ctx.caps.has_method("server/diagnostics") {
        let diag = call(&app, "server/diagnostics", json!({})).await?;
        ensure_eq!(
            diag["process"]["id"].as_u64(),
            app.pid().map(u64::from),
            "server/diagnostics process.id"
        );
        ensure!(
            diag["process"]["residentMemoryBytes"].as_u64().unwrap_or(0) > 0,
            "server/diagnostics residentMemoryBytes: {diag}"
        );
    }
    if ctx.caps.has_method("account/gatewayOAuth/read") {
        let gateway = call(&app, "account/gatewayOAuth/read", json!({})).await?;
        ensure_eq!(
            gateway["providerId"],
            json!("mock"),
            "gatewayOAuth providerId"
        );
        ensure_eq!(gateway["required"], json!(false), "gatewayOAuth required");
    }
    if ctx.caps.has_method("accountSession/list") {
        let sessions = call(&app, "accountSession/list", json!({})).await?;
        ensure_eq!(
            sessions["sessions"],
            json!([]),
            "accountSession/list sessions"
        );
    }
    let refused = [
        ("account/rateLimits/read", "rate limits"),
        ("account/usage/read", "token usage"),
        ("account/workspaceMessages/read", "workspace messages"),
    ];
    for (method, what) in refused {
        if !ctx.caps.has_method(method) {
            continue;
        }
        let e = rpc_error(app.call(method, json!({})).await, method)?;
        ensure_eq!(
            e.message,
            format!("codex account authentication required to read {what}"),
            "{method} error"
        );
    }
    world.expect_requests(0).await?;
    world.finish().await
}

async fn fs_round_trip(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let ws = world.workspace.clone();
    let path = |p: &str| ws.join(p).display().to_string();
    // "fs says hi" in base64.
    let data = "ZnMgc2F5cyBoaQ==";
    let wrote = call(
        &app,
        "fs/writeFile",
        json!({"path": path("w.txt"), "dataBase64": data}),
    )
    .await?;
    ensure_eq!(wrote, json!({}), "fs/writeFile result");
    let on_disk = std::fs::read_to_string(ws.join("w.txt")).context("reading w.txt")?;
    ensure_eq!(on_disk.as_str(), "fs says hi", "the written file");
    let read = call(&app, "fs/readFile", json!({"path": path("w.txt")})).await?;
    ensure_eq!(read["dataBase64"], json!(data), "fs/readFile dataBase64");
    let meta = call(&app, "fs/getMetadata", json!({"path": path("w.txt")})).await?;
    ensure_eq!(
        (meta["isFile"].clone(), meta["isDirectory"].clone()),
        (json!(true), json!(false)),
        "fs/getMetadata isFile, isDirectory"
    );
    call(
        &app,
        "fs/createDirectory",
        json!({"path": path("d/e"), "recursive": true}),
    )
    .await?;
    ensure!(ws.join("d/e").is_dir(), "fs/createDirectory made no d/e");
    call(
        &app,
        "fs/copy",
        json!({"sourcePath": path("w.txt"), "destinationPath": path("d/e/c.txt")}),
    )
    .await?;
    let listed = call(&app, "fs/readDirectory", json!({"path": path("d/e")})).await?;
    ensure_eq!(
        listed["entries"],
        json!([{"fileName": "c.txt", "isDirectory": false, "isFile": true}]),
        "fs/readDirectory entries"
    );
    call(
        &app,
        "fs/remove",
        json!({"path": path("d"), "recursive": true}),
    )
    .await?;
    ensure!(!ws.join("d").exists(), "fs/remove left d");
    rpc_error(
        app.call("fs/getMetadata", json!({"path": path("d")})).await,
        "fs/getMetadata of a removed directory",
    )?;
    world.expect_requests(0).await?;
    world.finish().await
}

async fn fuzzy(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    std::fs::write(world.workspace.join("notes.txt"), "hello").context("writing notes.txt")?;
    let app = world.start().await?;
    let root = world.workspace.display().to_string();
    let found = call(
        &app,
        "fuzzyFileSearch",
        json!({"query": "notes", "roots": [root]}),
    )
    .await?;
    let files = found["files"]
        .as_array()
        .with_context(|| format!("fuzzyFileSearch without files: {found}"))?;
    let hit = files
        .iter()
        .find(|f| f["path"] == "notes.txt")
        .with_context(|| format!("fuzzyFileSearch did not find notes.txt: {found}"))?;
    ensure_eq!(hit["root"], json!(root), "the match's root");
    ensure_eq!(
        hit["indices"],
        json!([0, 1, 2, 3, 4]),
        "the match's indices"
    );
    world.expect_requests(0).await?;
    world.finish().await
}

async fn config_writes(ctx: &Ctx) -> anyhow::Result<()> {
    let mut world = ctx.world(WorldOptions::default()).await?;
    let app = world.start().await?;
    let user = world.home.join("config.toml");
    let one = call(
        &app,
        "config/value/write",
        json!({"keyPath": "model_reasoning_effort", "value": "high", "mergeStrategy": "replace"}),
    )
    .await?;
    let two = call(
        &app,
        "config/batchWrite",
        json!({"edits": [{"keyPath": "hide_agent_reasoning", "value": true,
                          "mergeStrategy": "replace"}]}),
    )
    .await?;
    for (what, answer) in [("config/value/write", &one), ("config/batchWrite", &two)] {
        ensure_eq!(answer["status"], json!("ok"), "{what} status");
        ensure_eq!(
            answer["filePath"],
            json!(user.display().to_string()),
            "{what} filePath"
        );
        ensure!(answer["version"].is_string(), "{what} version: {answer}");
    }
    ensure!(
        one["version"] != two["version"],
        "the version did not change"
    );
    let config = call(&app, "config/read", json!({})).await?;
    ensure_eq!(
        config["config"]["model_reasoning_effort"],
        json!("high"),
        "config/read model_reasoning_effort"
    );
    ensure_eq!(
        config["config"]["hide_agent_reasoning"],
        json!(true),
        "config/read hide_agent_reasoning"
    );
    let text = std::fs::read_to_string(&user).context("reading config.toml")?;
    ensure!(
        text.contains("model_reasoning_effort = \"high\""),
        "config.toml lacks the written value:\n{text}"
    );
    world.expect_requests(0).await?;
    world.finish().await
}

async fn sections(ctx: &Ctx) -> anyhow::Result<()> {
    let script = vec![codex_parity_sidecar::Scripted::sse(
        codex_parity_sidecar::bodies::assistant_reply("resp-1", "sorted"),
    )];
    let (world, app, thread) = super::setup(ctx, script).await?;
    let turn = crate::app_server::turn::run_turn(
        &app,
        &thread,
        vec![crate::app_server::turn::text("file me")],
        &Default::default(),
    )
    .await?;
    ensure_eq!(
        turn.status,
        crate::app_server::turn::TurnStatus::Completed,
        "turn status"
    );
    let created = call(&app, "threadSection/create", json!({"name": "Parity"})).await?;
    ensure_eq!(created["section"]["name"], json!("Parity"), "created name");
    let id = created["section"]["id"]
        .as_str()
        .context("threadSection/create without section.id")?
        .to_string();
    let updated = call(
        &app,
        "threadSection/update",
        json!({"sectionId": id, "name": "Parity 2"}),
    )
    .await?;
    let section = &updated["section"];
    ensure_eq!(
        (&section["id"], &section["name"]),
        (&json!(id), &json!("Parity 2")),
        "threadSection/update section id and name"
    );
    // The whole section, as the catalogue has it: the fields it carries (values aside), in
    // alphabetical order (codex's own order varies).
    let mut fields: Vec<&String> = section
        .as_object()
        .into_iter()
        .flat_map(|o| o.keys())
        .collect();
    fields.sort();
    ctx.expect(
        "section.update_fields",
        json!(["appearance", "id", "name"]),
        json!(fields),
    );
    ensure_eq!(
        section["appearance"],
        json!(null),
        "threadSection/update appearance"
    );
    call(
        &app,
        "thread/section/move",
        json!({"threadId": thread, "sectionId": id}),
    )
    .await?;
    let read = app.thread_read(&thread, json!({})).await?;
    ensure_eq!(
        read["thread"]["section"]["id"],
        json!(id),
        "thread/read section.id"
    );
    let listed = call(&app, "threadSection/list", json!({})).await?;
    ensure_eq!(
        strings(&listed, "data", "name"),
        vec!["Pinned", "Parity 2"],
        "threadSection/list names"
    );
    call(&app, "threadSection/delete", json!({"sectionId": id})).await?;
    let listed = call(&app, "threadSection/list", json!({})).await?;
    ensure_eq!(
        strings(&listed, "data", "name"),
        vec!["Pinned"],
        "threadSection/list after delete"
    );
    world.expect_requests(1).await?;
    world.finish().await
}
