// A second, independent MCP client for spool mcp: the official TypeScript
// SDK's. It starts `spool mcp` over stdio with the arguments it is given,
// lists the tools, calls ready and next, reads spool://ready and the
// claimed task's resource, and prints what it saw as one JSON object.
//
//   node client.mjs SPOOL [ARGS...]      (TestMCPNodeClient runs it)
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [command, ...args] = process.argv.slice(2);
const transport = new StdioClientTransport({ command, args, stderr: "inherit" });
const client = new Client({ name: "spool-node-test", version: "1.0.0" });
await client.connect(transport);
try {
  const out = {};
  out.server = client.getServerVersion();
  out.tools = (await client.listTools()).tools.map((t) => t.name).sort();
  const ready = await client.callTool({ name: "ready", arguments: { limit: 0 } });
  out.ready = { isError: !!ready.isError, structured: ready.structuredContent, text: ready.content[0]?.text };
  const next = await client.callTool({ name: "next", arguments: {} });
  out.next = { isError: !!next.isError, structured: next.structuredContent, text: next.content[0]?.text };
  const refused = await client.callTool({ name: "done", arguments: { id: "sp-none" } });
  out.refused = { isError: !!refused.isError, structured: refused.structuredContent };
  const res = await client.readResource({ uri: "spool://ready" });
  out.resource = JSON.parse(res.contents[0].text);
  if (next.structuredContent?.id) {
    const task = await client.readResource({ uri: `spool://task/${next.structuredContent.id}` });
    out.task = JSON.parse(task.contents[0].text);
  }
  const prompt = await client.getPrompt({ name: "workflow" });
  out.promptBytes = Buffer.byteLength(prompt.messages[0].content.text);
  process.stdout.write(JSON.stringify(out) + "\n");
} finally {
  await client.close();
}
