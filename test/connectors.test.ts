// Runs every test file in test/connectors/ in this one process (test/helpers/test-group.ts).
import { runGroup } from './helpers/test-group.js';

runGroup(import.meta.filename);
