/**
 * The dashboard at `/`: one module a page under pages/, each registering its own routes (as a
 * Fastify plugin does) with what it reads and how it renders. Changes are POST forms carrying the
 * session's CSRF token (common/session.ts), answered with a 303 redirect (works without
 * JavaScript); each is allowed by the role (or token scope) in the environment's project.
 */
import type { App, ServerServices } from '../services.js';
import * as cleanup from './pages/cleanup.js';
import * as environment from './pages/environment.js';
import * as environments from './pages/environments.js';
import * as login from './pages/login.js';
import * as savings from './pages/savings.js';
import * as signIn from './pages/sign-in.js';

/** A page of the dashboard: it registers its routes on the app. */
interface DashboardPage {
  register(app: App, services: ServerServices): void;
}

const pages: readonly DashboardPage[] = [login, signIn, environments, environment, cleanup, savings];

export function registerDashboard(app: App, services: ServerServices): void {
  for (const page of pages) page.register(app, services);
}
