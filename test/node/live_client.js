// A Foxglove WebSocket client built on @foxglove/ws-protocol (the reference library) and ws, for the live-view
// tests: connect with the given subprotocol, subscribe to every channel, report one message of each (base64),
// then optionally publish on client channels: one on the e-stop topic and one on a topic the server must refuse.
// Usage: node live_client.js URL SUBPROTOCOL SECONDS [ESTOP_TOPIC [OTHER_TOPIC]]
// Prints one JSON object per line: {"event": ...}.
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");

const [url, subprotocol, seconds, estopTopic, otherTopic] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const ws = new WebSocket(url, [subprotocol]);
const client = new FoxgloveClient({ ws });
const channels = new Map();
const subs = new Map();
const got = new Set();
let published = false;
let refusedSent = false;

client.on("open", () => out({ event: "open", protocol: ws.protocol }));
client.on("error", (e) => out({ event: "error", error: String(e && e.message ? e.message : e) }));
client.on("serverInfo", (m) => out({ event: "serverInfo", capabilities: m.capabilities, name: m.name,
                                     supportedEncodings: m.supportedEncodings }));
client.on("status", (m) => out({ event: "status", level: m.level, message: m.message }));
client.on("advertise", (list) => {
  for (const ch of list) {
    channels.set(ch.id, ch);
    out({ event: "advertise", topic: ch.topic, encoding: ch.encoding, schemaName: ch.schemaName,
          schemaEncoding: ch.schemaEncoding, schema: ch.schema || "" });
    subs.set(client.subscribe(ch.id), ch);
  }
});
client.on("message", ({ subscriptionId, data }) => {
  const ch = subs.get(subscriptionId);
  if (!ch || got.has(ch.topic)) return;
  got.add(ch.topic);
  out({ event: "message", topic: ch.topic, encoding: ch.encoding,
        data: Buffer.from(data.buffer, data.byteOffset, data.byteLength).toString("base64") });
  // the refused publish first (its REJECTED event is then a message on /rths/events, which has none between
  // START and the end), the e-stop once every channel brought a message
  const missing = [...channels.values()].filter((c) => !got.has(c.topic)).map((c) => c.topic);
  if (otherTopic && !refusedSent && channels.size > 0 && missing.every((t) => t === "/rths/events")) {
    refusedSent = true;
    const other = client.advertise({ topic: otherTopic, encoding: "json", schemaName: "std_msgs/String" });
    client.sendMessage(other, new TextEncoder().encode(JSON.stringify({ data: "not allowed" })));
    out({ event: "published", topic: otherTopic });
  }
  if (estopTopic && !published && channels.size > 0 && missing.length === 0) {
    published = true;
    setTimeout(() => {
      const stop = client.advertise({ topic: estopTopic, encoding: "json", schemaName: "std_msgs/String" });
      client.sendMessage(stop, new TextEncoder().encode(JSON.stringify({ data: "operator via " + subprotocol })));
      out({ event: "published", topic: estopTopic });
      setTimeout(finish, 5000);     // the statuses and events that follow, then done
    }, 300);
  }
});
function finish() {
  out({ event: "end", channels: channels.size, messages: got.size });
  client.close();
  process.exit(0);
}
ws.on("close", () => setTimeout(finish, 100));
setTimeout(finish, Number(seconds) * 1000);
