// A Foxglove WebSocket client built on @foxglove/ws-protocol and ws that uses the server's "parameters"
// capability, as Lichtblick's or PlotJuggler's parameter panel does: read every parameter, set one (SET_NAME to
// SET_VALUE), then set READONLY_NAME (which the server must refuse), and report each answer and status.
// Usage: node live_params.js URL SUBPROTOCOL SECONDS SET_NAME SET_VALUE READONLY_NAME
// Prints one JSON object per line: {"event": ...}.
const { FoxgloveClient } = require("@foxglove/ws-protocol");
const WebSocket = require("ws");

const [url, subprotocol, seconds, setName, setValue, readonlyName] = process.argv.slice(2);
const out = (o) => process.stdout.write(JSON.stringify(o) + "\n");
const ws = new WebSocket(url, [subprotocol]);
const client = new FoxgloveClient({ ws });

client.on("open", () => out({ event: "open", protocol: ws.protocol }));
client.on("error", (e) => out({ event: "error", error: String(e && e.message ? e.message : e) }));
client.on("status", (m) => out({ event: "status", level: m.level, message: m.message }));
client.on("serverInfo", (m) => {
  out({ event: "serverInfo", capabilities: m.capabilities });
  // the run's loop must be going before a change is taken (the test waits for it before starting this client)
  client.getParameters([], "all");
});
client.on("parameterValues", ({ parameters, id }) => {
  out({ event: "parameterValues", id, parameters });
  if (id === "all") {
    client.setParameters([{ name: setName, value: Number(setValue) }], "set");
  } else if (id === "set") {
    client.setParameters([{ name: readonlyName, value: 0.5 }], "readonly");
  } else if (id === "readonly") {
    setTimeout(finish, 1000);
  }
});
function finish() {
  out({ event: "end" });
  client.close();
  process.exit(0);
}
ws.on("close", () => setTimeout(finish, 100));
setTimeout(finish, Number(seconds) * 1000);
