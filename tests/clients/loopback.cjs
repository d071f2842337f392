// Preloaded (`node --require`) into the stdio->HTTP bridge (supergateway) for
// tests/test_mcp_conformance.py. supergateway calls `app.listen(port)` with no host, which
// binds every interface; this pins every listening socket to 127.0.0.1 and reports the
// port actually bound (the test passes --port 0) as one stderr line: "LISTENING <port>".
const net = require("net");

const listen = net.Server.prototype.listen;
net.Server.prototype.listen = function (...args) {
  if (typeof args[0] === "number" || typeof args[0] === "string") {
    const hasHost = typeof args[1] === "string";
    args.splice(1, hasHost ? 1 : 0, "127.0.0.1");
  } else if (args[0] && typeof args[0] === "object" && !args[0].path) {
    args[0] = { ...args[0], host: "127.0.0.1" };
  }
  this.once("listening", () => {
    const address = this.address();
    if (address && typeof address === "object") process.stderr.write(`LISTENING ${address.port}\n`);
  });
  return listen.apply(this, args);
};
