import Fastify from 'fastify';

/**
 * The baseline: a bare Fastify (the bridge's version) with one POST route that echoes its JSON
 * body. Run in its own process so it never shares an event loop with the load generator.
 */
const app = Fastify({ logger: false });
app.post('/echo', async (req) => req.body);
const url = await app.listen({ host: '127.0.0.1', port: 0 });
process.stdout.write(`Server listening at ${url}\n`);
const stop = () => {
  void app.close().then(() => process.exit(0));
};
process.once('SIGINT', stop);
process.once('SIGTERM', stop);
