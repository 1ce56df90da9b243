/** The server's cleanup queue and planning pass on SQLite: test/server/cleanup/service-suite.ts. */
import { queueAndPlanningTests } from './service-suite.js';

queueAndPlanningTests('sqlite');
