/** The server's cleanup queue and planning pass on PostgreSQL: test/server/cleanup/service-suite.ts. */
import { queueAndPlanningTests } from './service-suite.js';

queueAndPlanningTests('postgres');
