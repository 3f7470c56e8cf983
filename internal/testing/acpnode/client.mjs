// An ACP client on the official TypeScript SDK, for tests: it starts the
// agent command given after "--" (tether acp ...), and drives it as an
// editor does: initialize, session/new in the cwd given, a streamed turn,
// a tool call allowed and one rejected, a cancel mid-turn, session/load
// with its history, and a prompt to an unknown session. It prints one
// JSON line of findings and exits 0 only if every check held.
//
// usage: node client.mjs SDK_DIR CWD -- AGENT_CMD [ARGS...]
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { pathToFileURL } from "node:url";
import path from "node:path";

const [sdkDir, cwd, sep, cmd, ...args] = process.argv.slice(2);
if (sep !== "--" || !cmd) {
  console.error("usage: node client.mjs SDK_DIR CWD -- AGENT_CMD [ARGS...]");
  process.exit(2);
}
const acp = await import(pathToFileURL(path.join(sdkDir, "dist/v1/stable/acp.js")).href);

const proc = spawn(cmd, args, { stdio: ["pipe", "pipe", "inherit"] });
const stream = acp.ndJsonStream(Writable.toWeb(proc.stdin), Readable.toWeb(proc.stdout));

let updates = [];
let answer = "allow_once";
let asked = [];
const checks = {};
const fail = (name, detail) => { checks[name] = `FAIL: ${detail}`; };
const pass = (name) => { checks[name] ??= "ok"; };

const app = acp.client({ name: "tether-test-client" })
  .onNotification(acp.methods.client.session.update, ({ params }) => { updates.push(params.update); })
  .onRequest(acp.methods.client.session.requestPermission, ({ params }) => {
    asked.push(params);
    const o = params.options.find((o) => o.kind === answer);
    return o ? { outcome: { outcome: "selected", optionId: o.optionId } } : { outcome: { outcome: "cancelled" } };
  });

const agentText = () => updates.filter((u) => u.sessionUpdate === "agent_message_chunk").map((u) => u.content.text ?? "").join("");
const userText = () => updates.filter((u) => u.sessionUpdate === "user_message_chunk").map((u) => u.content.text ?? "").join("");
const statusOf = (id) => {
  let s;
  for (const u of updates) {
    if ((u.sessionUpdate === "tool_call" || u.sessionUpdate === "tool_call_update") && u.toolCallId === id && u.status) s = u.status;
  }
  return s;
};
const text = (t) => [{ type: "text", text: t }];

try {
  await app.connectWith(stream, async (ctx) => {
    const init = await ctx.request(acp.methods.agent.initialize, { protocolVersion: acp.PROTOCOL_VERSION, clientCapabilities: {} });
    init.protocolVersion === 1 && init.agentCapabilities?.loadSession ? pass("initialize") : fail("initialize", JSON.stringify(init));

    const { sessionId } = await ctx.request(acp.methods.agent.session.new, { cwd, mcpServers: [] });
    let r = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("hello") });
    r.stopReason === "end_turn" && agentText() ? pass("text turn") : fail("text turn", JSON.stringify(r));

    for (const [kind, want] of [["allow_once", "completed"], ["reject_once", "failed"]]) {
      updates = []; asked = []; answer = kind;
      r = await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("REQUEST_APPROVAL now") });
      const id = asked[0]?.toolCall?.toolCallId;
      asked.length === 1 && statusOf(id) === want && r.stopReason === "end_turn"
        ? pass(`tool ${kind}`) : fail(`tool ${kind}`, `asked ${asked.length}, status ${statusOf(id)}, ${r.stopReason}`);
    }

    updates = [];
    const slow = ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("SLOW") });
    for (let i = 0; i < 200 && !updates.some((u) => u.sessionUpdate === "tool_call"); i++) await new Promise((res) => setTimeout(res, 50));
    try {
      await ctx.request(acp.methods.agent.session.prompt, { sessionId, prompt: text("second") });
      fail("second prompt", "accepted");
    } catch (e) { e.code === -32600 ? pass("second prompt") : fail("second prompt", `code ${e.code}`); }
    await ctx.notify(acp.methods.agent.session.cancel, { sessionId });
    r = await slow;
    r.stopReason === "cancelled" ? pass("cancel") : fail("cancel", r.stopReason);

    try {
      await ctx.request(acp.methods.agent.session.prompt, { sessionId: "ses_nosuch", prompt: text("hi") });
      fail("unknown session", "accepted");
    } catch (e) { e.code === -32602 ? pass("unknown session") : fail("unknown session", `code ${e.code}`); }

    updates = [];
    await ctx.request(acp.methods.agent.session.load, { sessionId, cwd, mcpServers: [] });
    userText().includes("hello") && agentText() ? pass("load") : fail("load", `user ${JSON.stringify(userText())}`);
    const list = await ctx.request(acp.methods.agent.session.list, { cwd });
    list.sessions.some((s) => s.sessionId === sessionId) ? pass("list") : fail("list", JSON.stringify(list));
  });
} catch (e) {
  fail("connection", String(e?.stack ?? e));
}
proc.stdin.end();
await new Promise((res) => proc.on("exit", res));
const ok = Object.values(checks).every((v) => v === "ok");
console.log(JSON.stringify({ ok, checks }));
process.exit(ok ? 0 : 1);
