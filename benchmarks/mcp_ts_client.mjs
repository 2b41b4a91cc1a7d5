// The MCP TypeScript SDK's stdio client (what Claude Desktop, Claude Code and the Inspector
// use) against a real `kbtool mcp`: one whole get_diff per line of output, cold then warm.
// Run by benchmarks/mcp_ts_client.py (which installs the SDK into a cache directory).
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [python, root, kb, from, to, runs] = process.argv.slice(2);
const transport = new StdioClientTransport({
  command: python,
  args: ["-P", "-m", "kbtool.cli", "mcp", "--db", kb],
  env: { ...process.env, PYTHONPATH: root },
});
const client = new Client({ name: "kbtool-bench", version: "1" });
await client.connect(transport);
const args = { from_version_id: Number(from), to_version_id: Number(to) };
for (let i = 0; i < Number(runs); i++) {
  const t = performance.now();
  const r = await client.callTool({ name: "get_diff", arguments: args }, undefined, { timeout: 600000 });
  const ms = performance.now() - t;
  if (r.isError) throw new Error(r.content[0].text);
  console.log(JSON.stringify({ kind: i ? "warm" : "cold", ms, chars: r.content[0].text.length }));
}
await client.close();
